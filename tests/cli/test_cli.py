"""The ``mnesis`` command line, driven through typer's runner and ``run(argv)``."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner, Result

from mnesis import MnesisSession, StorePool, TextPart
from mnesis.cli import app, run
from mnesis.llm import FakeLLM

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def assert_clean_failure(result: Result, code: int, message: str) -> None:
    """Exit ``code``, ``message`` on stderr, nothing on stdout, no traceback anywhere."""
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Result]:
    """One 60-turn demo on a fresh database, shared by the tests that inspect it."""
    db = str(tmp_path_factory.mktemp("demo") / "demo.db")
    return db, invoke("demo", "--turns", "60", "--quiet", "--db", db)


@pytest.fixture(scope="module")
def demo_db(demo: tuple[str, Result]) -> str:
    assert demo[1].exit_code == 0, demo[1].output
    return demo[0]


@pytest.fixture(scope="module")
def session_id(demo_db: str) -> str:
    listed = json.loads(invoke("sessions", "--db", demo_db, "--json").stdout)
    return str(listed[0]["id"])


def context_json(session_id: str, db: str, *extra: str) -> dict[str, Any]:
    result = invoke("context", session_id, "--db", db, "--json", *extra)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


class TestDemo:
    def test_demo_exits_zero_and_reports_compaction_and_the_budget(
        self, demo: tuple[str, Result]
    ) -> None:
        _, result = demo
        assert result.exit_code == 0, result.output
        assert "Compactions" in result.stdout
        assert "usable" in result.stdout and "budget" in result.stdout
        assert "Traceback" not in result.output

    def test_quiet_prints_only_the_final_tables(self, demo: tuple[str, Result]) -> None:
        out = demo[1].stdout
        assert out.lstrip().startswith("Stored")
        assert "Inspect it" not in out and "turn " not in out

    def test_the_database_holds_summaries_afterwards(self, demo_db: str) -> None:
        with sqlite3.connect(demo_db) as conn:
            (count,) = conn.execute("SELECT count(*) FROM summaries").fetchone()
        assert count > 0

    def test_the_final_context_fits_the_usable_budget(self, session_id: str, demo_db: str) -> None:
        data = context_json(session_id, demo_db)
        assert data["budget"]["context_limit"] == 32_000  # the demo's window, not the fake's
        assert 0 < data["token_estimate"] <= data["budget"]["usable"]
        budget = ["context_limit", "reserved_output_tokens", "compaction_buffer", "usable"]
        assert list(data["budget"]) == budget  # the fields of ContextBudget, in their order

    def test_a_seed_reproduces_the_stored_conversation(self, tmp_path: Path) -> None:
        def counts(db: Path) -> tuple[int, ...]:
            assert (
                invoke("demo", "--turns", "25", "-q", "--seed", "4", "--db", str(db)).exit_code == 0
            )
            with sqlite3.connect(db) as conn:
                return tuple(
                    conn.execute(sql).fetchone()[0]
                    for sql in (
                        "SELECT count(*) FROM messages WHERE is_summary = 0",
                        "SELECT count(*) FROM message_parts WHERE part_type = 'tool'",
                        "SELECT count(*) FROM message_parts WHERE tool_state = 'error'",
                        "SELECT sum(length(content)) FROM message_parts WHERE part_type = 'tool'",
                    )
                )

        assert counts(tmp_path / "a.db") == counts(tmp_path / "b.db")

    def test_without_quiet_it_shows_the_run_and_how_to_inspect_it(self, tmp_path: Path) -> None:
        result = invoke("demo", "--turns", "40", "--db", str(tmp_path / "d.db"))
        assert result.exit_code == 0, result.output
        assert "mnesis demo" in result.stdout
        assert re.search(r"turn +\d+ +[\d,]+ → [\d,]+", result.stdout)  # a compaction log line
        assert "Inspect it: mnesis show sess_" in result.stdout

    def test_a_second_demo_adds_a_session_to_an_existing_database(self, tmp_path: Path) -> None:
        db = str(tmp_path / "twice.db")
        for _ in range(2):
            assert invoke("demo", "--turns", "3", "-q", "--db", db).exit_code == 0
        assert len(json.loads(invoke("sessions", "--db", db, "--json").stdout)) == 2


class TestInspection:
    def test_sessions_json_lists_the_demo_session(self, demo_db: str, session_id: str) -> None:
        listed = json.loads(invoke("sessions", "--db", demo_db, "--json").stdout)
        assert [s["id"] for s in listed] == [session_id]
        assert listed[0]["model"] == "fake/demo"
        assert listed[0]["messages"] > 120 and listed[0]["context_tokens"] > 0

    def test_sessions_table_and_the_env_default_database(
        self, demo_db: str, session_id: str
    ) -> None:
        result = invoke("sessions", env={"MNESIS_DB_PATH": demo_db})
        assert result.exit_code == 0, result.output
        assert session_id in result.stdout and "fake/demo" in result.stdout

    def test_show_lists_the_newest_messages_with_roles_and_parts(
        self, demo_db: str, session_id: str
    ) -> None:
        result = invoke("show", session_id, "--db", demo_db, "--limit", "12")
        assert result.exit_code == 0, result.output
        assert "user" in result.stdout and "assistant" in result.stdout
        data = json.loads(
            invoke("show", session_id, "--db", demo_db, "--limit", "12", "--json").stdout
        )
        assert len(data["messages"]) == 12
        assert data["messages"][-1]["seq"] == data["total_messages"]
        parts = [p for m in data["messages"] for p in m["parts"]]
        assert any(p["type"] == "tool" and p["preview"] for p in parts)

    def test_show_limit_zero_shows_every_message_summaries_included(
        self, demo_db: str, session_id: str
    ) -> None:
        data = json.loads(
            invoke("show", session_id, "--db", demo_db, "--limit", "0", "--json").stdout
        )
        assert len(data["messages"]) == data["total_messages"]
        markers = [m for m in data["messages"] if m["is_summary"]]
        assert markers and markers[0]["parts"][-1]["type"] == "compaction"

    def test_context_annotates_summaries_and_breaks_down_tokens(
        self, demo_db: str, session_id: str
    ) -> None:
        result = invoke("context", session_id, "--db", demo_db)
        assert result.exit_code == 0, result.output
        assert "summary sum_" in result.stdout and "covers" in result.stdout
        assert "usable budget" in result.stdout
        data = context_json(session_id, demo_db)
        kinds = [i.get("kind") for i in data["items"] if i["type"] == "summary"]
        assert kinds and set(kinds) <= {"leaf", "condensed"}
        breakdown = data["breakdown"]
        parts = breakdown["system_prompt"] + breakdown["summaries"] + breakdown["messages"]
        assert parts == data["token_estimate"]

    def test_context_window_can_be_overridden(self, demo_db: str, session_id: str) -> None:
        data = context_json(session_id, demo_db, "--context-limit", "64000")
        assert data["budget"]["context_limit"] == 64_000

    async def test_context_leaves_a_live_session_active(self, tmp_path: Path) -> None:
        db = str(tmp_path / "live.db")
        pool = StorePool()
        session = await MnesisSession.create(model="fake/x", db_path=db, pool=pool, llm=FakeLLM())
        await session.record("hi", [TextPart(text="hello")])
        try:
            # The CLI runs its own event loop, so it cannot run on this test's loop.
            result = await asyncio.to_thread(invoke, "context", session.id, "--db", db, "--json")
            assert result.exit_code == 0, result.output
            assert (await session.store.get_session(session.id)).status == "active"
        finally:
            await session.close()
            await pool.close_all()

    def test_an_empty_file_is_not_a_database_and_stays_empty(self, tmp_path: Path) -> None:
        db = tmp_path / "empty.db"
        db.touch()
        assert_clean_failure(invoke("sessions", "--db", str(db)), 1, "not a mnesis database")
        assert db.stat().st_size == 0

    def test_sessions_of_a_database_without_sessions(self, tmp_path: Path) -> None:
        db = str(tmp_path / "none.db")
        assert invoke("import", str(tmp_path), "--db", db).exit_code == 1  # no transcripts
        sqlite3.connect(db).close()
        result = invoke("purge", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--yes", "--db", db)
        assert result.exit_code == 1  # creates and migrates the file: an empty database
        result = invoke("sessions", "--db", db)
        assert result.exit_code == 0 and "No sessions" in result.stdout


class TestErrors:
    @pytest.mark.parametrize("command", ["show", "context"])
    def test_an_unknown_session_is_one_clear_line_and_exit_1(
        self, command: str, demo_db: str
    ) -> None:
        result = invoke(command, "sess_does_not_exist", "--db", demo_db)
        assert_clean_failure(result, 1, "session not found: 'sess_does_not_exist'")
        assert len(result.stderr.strip().splitlines()) == 1

    @pytest.mark.parametrize("command", [["sessions"], ["show", "sess_x"], ["demo", "-q"]])
    def test_a_file_that_is_not_a_database(self, command: list[str], tmp_path: Path) -> None:
        path = tmp_path / "notes.txt"
        path.write_text("not a database\n" * 100)
        assert_clean_failure(invoke(*command, "--db", str(path)), 1, "is not a database")

    def test_a_corrupt_database(self, tmp_path: Path) -> None:
        path = tmp_path / "corrupt.db"
        path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
        assert_clean_failure(invoke("sessions", "--db", str(path)), 1, "not a usable mnesis")

    def test_another_applications_sqlite_file_is_left_alone(self, tmp_path: Path) -> None:
        path = tmp_path / "other.db"
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
        for command in (["sessions"], ["demo", "--turns", "2", "-q"]):
            assert_clean_failure(invoke(*command, "--db", str(path)), 1, "another application")
        with sqlite3.connect(path) as conn:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
        assert tables == ["notes"]

    def test_inspecting_a_missing_database_does_not_create_it(self, tmp_path: Path) -> None:
        path = tmp_path / "missing.db"
        assert_clean_failure(invoke("sessions", "--db", str(path)), 1, "no database at")
        assert not path.exists()

    @pytest.mark.parametrize(
        "args",
        [["show"], ["demo", "--turns", "0"], ["sessions", "--db", ""], ["nonsense"]],
    )
    def test_usage_errors_exit_2(self, args: list[str]) -> None:
        result = invoke(*args)
        assert result.exit_code == 2 and "Traceback" not in result.output


class TestRun:
    def test_run_returns_exit_codes(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert run(["--version"]) == 0
        assert "mnesis " in capsys.readouterr().out
        assert run(["sessions", "--db", str(tmp_path / "none.db")]) == 1
        assert "no database at" in capsys.readouterr().err
        assert run(["nonsense"]) == 2

    def test_run_runs_a_demo(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert run(["demo", "--turns", "5", "-q", "--db", str(tmp_path / "r.db")]) == 0
        assert "Next context" in capsys.readouterr().out

    def test_the_console_script(self, tmp_path: Path) -> None:
        script = Path(sys.executable).with_name("mnesis")
        if not script.exists():
            pytest.skip("the mnesis console script is not installed in this environment")
        done = subprocess.run(
            [str(script), "demo", "--turns", "30", "--quiet", "--db", str(tmp_path / "x.db")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "Compactions" in done.stdout


class TestDocs:
    """Like sqlite-utils' test_docs: every command and option is in docs/cli.md."""

    def sections(self) -> dict[str, str]:
        text = DOCS.read_text(encoding="utf-8")
        found = re.split(r"^## `mnesis (\w+)`", text, flags=re.MULTILINE)
        return dict(zip(found[1::2], found[2::2], strict=True))

    def test_every_command_is_documented(self) -> None:
        group = get_command(app)
        assert sorted(self.sections()) == sorted(group.commands)  # type: ignore[attr-defined]

    def test_every_option_is_documented_in_its_section(self) -> None:
        sections = self.sections()
        for name, command in get_command(app).commands.items():  # type: ignore[attr-defined]
            for param in command.params:
                for flag in param.opts:
                    if flag.startswith("--") and flag != "--help":
                        assert f"`{flag}" in sections[name], f"{name} {flag} is not documented"
