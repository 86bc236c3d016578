"""Every inspection command on PostgreSQL: ``--db postgresql://…`` and ``LCM_DATABASE_URL``.

One compacted session is recorded into a database of the test server once per module
(through the library, as an application would); the commands then read it back.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from mnesis.cli import app
from mnesis.cli.check import default_backup_path
from tests.backends import template_location
from tests.cli.recorded import record_compacted
from tests.pg_fixtures import _with_database

pytestmark = pytest.mark.postgres


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def ok_json(*args: str, env: dict[str, str] | None = None) -> Any:
    result = invoke(*args, "--json", env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def stored(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(URL, session ID) of a database holding one compacted 40-turn session."""
    with template_location("postgres", request, "cli") as url:
        session_id, _ = asyncio.run(record_compacted(url, turns=40, model="fake/cli"))
        yield url, session_id


class TestEveryCommandTakesAUrl:
    def test_sessions_lists_the_session(self, stored: tuple[str, str]) -> None:
        url, session_id = stored
        listed = ok_json("sessions", "--db", url)
        assert [s["id"] for s in listed] == [session_id]

    def test_show_prints_the_conversation(self, stored: tuple[str, str]) -> None:
        url, session_id = stored
        result = invoke("show", session_id, "--db", url)
        assert result.exit_code == 0, result.output
        assert "module_39" in result.stdout

    def test_context_shows_summaries_and_the_fresh_tail(self, stored: tuple[str, str]) -> None:
        url, session_id = stored
        data = ok_json("context", session_id, "--db", url)
        assert data["session_id"] == session_id
        assert "summary" in json.dumps(data)

    def test_check_finds_a_whole_store_and_names_it_without_a_password(
        self, stored: tuple[str, str]
    ) -> None:
        url, _ = stored
        data = ok_json("check", "--db", url, "--tokens")
        assert data["ok"] is True
        assert data["sessions_checked"] == 1
        assert data["database"] == url

    def test_check_repair_on_a_whole_store_writes_no_backup(
        self, stored: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        url, _ = stored
        monkeypatch.chdir(tmp_path)
        result = invoke("check", "--db", url, "--repair")
        assert result.exit_code == 0, result.output
        assert "no violations" in result.stdout
        assert os.listdir(tmp_path) == []


class TestTheEnvironmentNamesTheServer:
    def test_lcm_database_url_is_the_default_database(self, stored: tuple[str, str]) -> None:
        url, session_id = stored
        env = {"LCM_DATABASE_URL": url, "MNESIS_DB_PATH": "/nonexistent/x.db"}
        assert [s["id"] for s in ok_json("sessions", env=env)] == [session_id]
        assert ok_json("context", session_id, env=env)["session_id"] == session_id
        assert ok_json("check", env=env)["ok"] is True
        result = invoke("show", session_id, env=env)
        assert result.exit_code == 0, result.output

    def test_db_wins_over_lcm_database_url(self, stored: tuple[str, str], tmp_path: Path) -> None:
        url, _ = stored
        missing = str(tmp_path / "none.db")
        result = invoke("sessions", "--db", missing, env={"LCM_DATABASE_URL": url})
        assert result.exit_code == 1
        assert "no database at" in result.stderr

    def test_an_unknown_scheme_in_lcm_database_url_is_one_line_naming_it(self) -> None:
        result = invoke("sessions", env={"LCM_DATABASE_URL": "mysql://root@db/lcm"})
        assert result.exit_code == 1
        assert "LCM_DATABASE_URL" in result.stderr
        assert "Traceback" not in result.output


class TestAServerThatCannotBeReached:
    @pytest.mark.parametrize("command", ["sessions", "check"])
    def test_a_missing_database_is_one_clear_line(self, pg_dsn: str, command: str) -> None:
        url = _with_database(pg_dsn, "mnesis_no_such_database")
        result = invoke(command, "--db", url)
        assert result.exit_code == 1, result.output
        assert "cannot connect to PostgreSQL" in result.stderr
        assert "mnesis_no_such_database" in result.stderr
        assert result.stdout == ""
        assert "Traceback" not in result.output

    def test_a_password_never_shows_in_the_error(self, pg_dsn: str) -> None:
        url = _with_database(pg_dsn, "mnesis_no_such_database").replace(
            "postgres@", "postgres:s3cret@", 1
        )
        result = invoke("sessions", "--db", url)
        assert result.exit_code == 1
        assert "s3cret" not in result.output


class TestTheBackupOfAServer:
    def test_the_default_backup_is_a_jsonl_dump_named_after_the_database(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        path = default_backup_path("postgresql://u:pw@db.example:5432/lcm_prod?sslmode=require")
        assert os.path.dirname(path) == str(tmp_path)
        name = os.path.basename(path)
        assert name.startswith("lcm_prod.before-repair-") and name.endswith(".jsonl")
        open(path, "x").close()
        assert default_backup_path("postgresql://db.example/lcm_prod") != path

    def test_a_url_as_backup_is_refused(self, stored: tuple[str, str]) -> None:
        url, _ = stored
        result = invoke("check", "--db", url, "--repair", "--backup", url)
        assert result.exit_code == 1
        assert "name a new file" in result.stderr
