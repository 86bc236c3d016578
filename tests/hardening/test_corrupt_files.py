"""Regressions of issue 17 for damaged files and the CLI: a row that no longer decodes is
a ``StoreCorruptError`` naming it, ``mnesis check`` reports the damage as violations
(SQLite's own check included), and the CLI prints any text the API accepted."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from mnesis import MnesisSession, StorePool
from mnesis.cli import app
from mnesis.errors import StoreCorruptError
from mnesis.integrity import IntegrityChecker, ViolationKind
from mnesis.llm import FakeLLM


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def make_session(db_path: str, user: str = "hello there", answer: str = "hi") -> str:
    """A session with one recorded turn, made on its own event loop (the CLI runs its
    own, so the tests that invoke it are synchronous)."""
    return asyncio.run(_make_session(db_path, user, answer))


async def _make_session(db_path: str, user: str, answer: str) -> str:
    pool = StorePool()
    try:
        session = await MnesisSession.create(
            model="fake/corrupt", db_path=db_path, pool=pool, llm=FakeLLM()
        )
        await session.record(user, answer)
        await session.close()
        return session.id
    finally:
        await pool.close_all()


def damage_a_part(db_path: str) -> str:
    """Cut the last character off the JSON of the newest part (bypassing the append-only
    trigger): ``{}``, the whole JSON of a plain text part, becomes ``{``."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'message_parts_immutable'"
        ).fetchone()
        conn.execute("DROP TRIGGER message_parts_immutable")
        (part_id,) = conn.execute("SELECT MAX(id) FROM message_parts").fetchone()
        conn.execute(
            "UPDATE message_parts SET content = substr(content, 1, length(content) - 1) "
            "WHERE id = ?",
            (part_id,),
        )
        conn.execute(sql)
        return str(part_id)
    finally:
        conn.close()


def damage_an_index(db_path: str) -> None:
    """An index whose entries disagree with its table, as a torn page would leave it."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("CREATE INDEX damaged_idx ON sessions (model)")
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET sql = 'CREATE INDEX damaged_idx ON sessions (agent)' "
            "WHERE name = 'damaged_idx'"
        )
    finally:
        conn.close()


class TestUndecodableRows:
    async def test_reading_the_messages_raises_store_corrupt_naming_the_row(
        self, db_path: str, pool: StorePool
    ) -> None:
        session_id = await _make_session(db_path, "hello there", "hi")
        part_id = damage_a_part(db_path)
        store = await pool.acquire(db_path=db_path)
        with pytest.raises(StoreCorruptError, match=part_id):
            await store.get_messages(session_id)

    def test_show_prints_one_error_line(self, db_path: str) -> None:
        session_id = make_session(db_path)
        part_id = damage_a_part(db_path)
        result = invoke("show", session_id, "--db", db_path)
        assert result.exit_code == 1
        assert part_id in result.output and "Traceback" not in result.output

    def test_check_deep_reports_it_and_the_plain_check_does_not_decode(self, db_path: str) -> None:
        make_session(db_path)
        part_id = damage_a_part(db_path)
        assert invoke("check", "--db", db_path).exit_code == 0
        result = invoke("check", "--db", db_path, "--deep", "--json")
        assert result.exit_code == 1
        report = json.loads(result.output)
        # The damaged text no longer matches its link of the session's hash chain either.
        assert report["by_kind"] == {
            ViolationKind.UNDECODABLE_ROW.value: 1,
            ViolationKind.CHAIN_BROKEN.value: 1,
        }
        for violation in report["violations"]:
            assert part_id in violation["detail"] or violation["object_id"] == part_id


class TestTheEnginesOwnCheck:
    def test_a_damaged_index_is_a_violation_with_deep(self, db_path: str) -> None:
        make_session(db_path)
        damage_an_index(db_path)
        result = invoke("check", "--db", db_path, "--deep", "--json")
        assert result.exit_code == 1, result.output
        report = json.loads(result.output)
        assert report["by_kind"] == {ViolationKind.ENGINE_INTEGRITY.value: 1}
        assert "damaged_idx" in report["violations"][0]["detail"]

    async def test_the_checker_runs_quick_check_when_asked(
        self, db_path: str, pool: StorePool
    ) -> None:
        await _make_session(db_path, "hello there", "hi")
        store = await pool.acquire(db_path=db_path)
        report = await IntegrityChecker(store, engine_check=True).run()
        assert report.ok
        assert report.engine_checks == ["PRAGMA quick_check"]
        assert report.engine_checks_unavailable == []
        assert (await store.engine_check()).problems == []
        assert (await store.engine_check(full=True)).ran == ["PRAGMA integrity_check"]


class TestCliOutput:
    @pytest.mark.parametrize(
        "command", [["show"], ["show", "--json"], ["context"], ["show", "--full"]]
    )
    def test_text_with_a_lone_surrogate_is_printed_escaped(
        self, db_path: str, command: list[str]
    ) -> None:
        session_id = make_session(db_path, "hello \ud800 there", "ok \udfff")
        args = [command[0], session_id, "--db", db_path, *command[1:]]
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        assert "\\ud800" in result.output

    @pytest.mark.parametrize(
        "args",
        [
            ["sessions", "--limit", "100000000000000000000"],
            ["show", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--limit", "100000000000000000000"],
            ["context", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--context-limit", str(2**64)],
        ],
        ids=["sessions", "show", "context"],
    )
    def test_an_out_of_range_number_is_a_usage_error(
        self, db_path: str, tmp_path: Path, args: list[str]
    ) -> None:
        make_session(db_path)
        result = invoke(*args, "--db", db_path)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and "Overflow" not in result.output
