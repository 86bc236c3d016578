"""``IntegrityChecker``: every kind of violation, produced on purpose and detected.

Each :class:`Fault` writes bad rows into a copy of a compacted session with raw
``sqlite3`` (see :func:`tests.integrity.tampering.tampering`) and names the violation kinds
the checker must report: exactly those, no more, and naming the object the fault
touched. A session built only through the public API reports nothing.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from mnesis import CompactionConfig, MnesisConfig, MnesisSession, StorePool
from mnesis.cli import app, run
from mnesis.errors import InvalidArgumentError, SessionNotFoundError
from mnesis.integrity import IntegrityChecker, IntegrityReport, ViolationKind
from mnesis.integrity.report import REPAIRABLE
from mnesis.llm import FakeLLM
from mnesis.models.ids import new_id
from mnesis.store.base import FileReference
from mnesis.store.sqlite import SQLiteStore
from tests.compaction import lineage_report
from tests.integrity.checksums import database_checksum
from tests.integrity.faults import (
    FAULTS,
    LINEAGE_TRIGGERS,
    Fault,
    inflated_token_estimate,
    last_message_dropped,
    lineage_deleted,
    two_messages_swapped,
)
from tests.integrity.tampering import append_tool_message, summaries_in_context, tampering
from tests.integrity.template import Template, build_template, copy_database
from tests.store.sqlite.helpers import sqlite_db

K = ViolationKind
UNKNOWN_SESSION = "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"
NO_AUTO = MnesisConfig(compaction=CompactionConfig(auto=False))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return build_template(str(tmp_path_factory.mktemp("checker") / "template.db"))


@pytest.fixture
def copy(template: Template, tmp_path: Path) -> Template:
    """A private copy of the template to corrupt."""
    return Template(copy_database(template.db_path, str(tmp_path / "copy.db")), template.session_id)


async def check(
    db_path: str, session_id: str | None, *, tokens: bool = False, deep: bool = False
) -> IntegrityReport:
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=db_path)
        return await IntegrityChecker(store, check_tokens=tokens, deep=deep).run(session_id)
    finally:
        await pool.close_all()


def _name_only_file(copy: Template, file_id: str) -> None:
    """Make ``file_id`` the only file the first summary in context names."""
    with tampering(copy.db_path, drop_triggers=("summaries_no_update",)) as conn:
        summary_id = summaries_in_context(conn, copy.session_id)[0]
        conn.execute(
            "UPDATE summaries SET file_ids = ? WHERE id = ?", (json.dumps([file_id]), summary_id)
        )


class TestEachViolationKindIsDetected:
    @pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
    async def test_the_fault_is_reported_as_exactly_its_kinds(
        self, copy: Template, fault: Fault
    ) -> None:
        with tampering(copy.db_path, drop_triggers=fault.drop_triggers) as conn:
            named = fault.inject(conn, copy.session_id)
        report = await check(
            copy.db_path, copy.session_id, tokens=fault.check_tokens, deep=fault.deep
        )
        assert set(report.by_kind()) == {k.value for k in fault.kinds}, report.violations
        assert any(v.object_id in named for v in report.violations), (named, report.violations)
        for v in report.violations:
            assert v.session_id == copy.session_id
            assert v.repairable == (v.kind in REPAIRABLE)
            assert v.detail
        assert not report.ok

    def test_every_kind_is_produced_by_some_fault(self) -> None:
        # ENGINE_INTEGRITY concerns the database file, not a session: it has its own
        # test in tests/hardening/test_corrupt_files.py.
        kinds = {k for f in FAULTS for k in f.kinds}
        assert kinds == set(ViolationKind) - {K.ENGINE_INTEGRITY}

    async def test_token_estimates_are_only_compared_when_asked(self, copy: Template) -> None:
        with tampering(copy.db_path) as conn:
            inflated_token_estimate(conn, copy.session_id)
        assert (await check(copy.db_path, copy.session_id)).ok
        assert not (await check(copy.db_path, copy.session_id, tokens=True)).ok

    @pytest.mark.parametrize(
        "file_id", ["file_3fa2c81e9b0d4f17", "file_notes.txt", "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV"]
    )
    async def test_strings_that_are_not_mnesis_file_ids_are_not_checked(
        self, copy: Template, file_id: str
    ) -> None:
        _name_only_file(copy, file_id)
        assert (await check(copy.db_path, copy.session_id)).ok

    async def test_a_file_id_with_its_file_reference_is_fine(self, copy: Template) -> None:
        file_id = new_id("file")
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=copy.db_path)
            await store.store_file_reference(
                FileReference("sha256:" + "ab" * 32, file_id, "data/big.csv", "csv", 12_000)
            )
        finally:
            await pool.close_all()
        _name_only_file(copy, file_id)
        assert (await check(copy.db_path, copy.session_id)).ok


class TestACleanStore:
    async def test_a_compacted_session_reports_zero_violations(self, template: Template) -> None:
        conn = sqlite3.connect(template.db_path)
        try:
            kinds = dict(conn.execute("SELECT kind, COUNT(*) FROM summaries GROUP BY kind"))
            in_context = summaries_in_context(conn, template.session_id)
        finally:
            conn.close()
        assert kinds.get("leaf", 0) > 0 and kinds.get("condensed", 0) > 0, kinds
        assert in_context
        report = await check(template.db_path, template.session_id, tokens=True)
        assert report.violations == []
        assert report.sessions_checked == 1
        assert report.messages_checked > 200
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=template.db_path)
            lineage = await lineage_report(store, template.db_path, template.session_id)
        finally:
            await pool.close_all()
        assert lineage.problems == []  # the compaction tests' independent check agrees

    async def test_200_small_sessions_are_checked_and_the_throughput_printed(
        self, db_path: str, pool: StorePool
    ) -> None:
        async def one(index: int) -> str:
            session = await MnesisSession.create(
                model="fake/small", db_path=db_path, pool=pool, llm=FakeLLM(), config=NO_AUTO
            )
            for turn in range(4):
                await session.record(f"question {index}.{turn}", f"answer {index}.{turn}")
            await session.close()
            return session.id

        ids = await asyncio.gather(*[one(i) for i in range(200)])
        store = await pool.acquire(db_path=db_path)
        try:
            started = time.perf_counter()
            report = await IntegrityChecker(store).run()
            wall = time.perf_counter() - started
            tokens = await IntegrityChecker(store, check_tokens=True).run()
        finally:
            await store.close()
        assert report.ok and tokens.ok
        assert report.sessions_checked == len(set(ids)) == 200
        assert report.messages_checked == 200 * 8
        print(
            f"\nintegrity check: {report.sessions_checked} sessions, {report.messages_checked} "
            f"messages in {wall * 1000:.0f} ms: {report.sessions_per_second:,.0f} sessions/s "
            f"({tokens.sessions_per_second:,.0f} sessions/s with token re-estimation)"
        )

    async def test_an_empty_store_is_clean(self, db_path: str, pool: StorePool) -> None:
        store = await pool.acquire(db_path=db_path)
        try:
            report = await IntegrityChecker(store).run()
        finally:
            await store.close()
        assert report.ok and report.sessions_checked == 0


class TestScope:
    async def test_checking_one_session_ignores_faults_in_another(
        self, copy: Template, pool: StorePool
    ) -> None:
        other = await MnesisSession.create(
            model="fake/other", db_path=copy.db_path, pool=pool, llm=FakeLLM(), config=NO_AUTO
        )
        await other.record("hello", "hi")
        await other.close()
        with tampering(copy.db_path) as conn:
            last_message_dropped(conn, copy.session_id)
        assert (await check(copy.db_path, other.id)).ok
        everything = await check(copy.db_path, None)
        assert everything.sessions_checked == 2
        assert {v.session_id for v in everything.violations} == {copy.session_id}

    @pytest.mark.parametrize(
        "session_id",
        ["", "sess_", "sess_bad", "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV", "sess_' OR 1=1 --", "s\x00"],
    )
    async def test_a_malformed_session_id_is_an_invalid_argument(
        self, db_path: str, pool: StorePool, session_id: str
    ) -> None:
        store = await pool.acquire(db_path=db_path)
        try:
            with pytest.raises(InvalidArgumentError):
                await IntegrityChecker(store).run(session_id)
        finally:
            await store.close()

    async def test_an_unknown_session_is_not_found(self, db_path: str, pool: StorePool) -> None:
        store = await pool.acquire(db_path=db_path)
        try:
            with pytest.raises(SessionNotFoundError):
                await IntegrityChecker(store).run(UNKNOWN_SESSION)
        finally:
            await store.close()


class TestASnapshotIsConsistent:
    """The checker reads several tables per session. A write committed by another
    connection (another process: an agent running while ``mnesis check`` runs) between
    those reads must not look like a violation."""

    async def test_a_turn_committed_between_the_snapshot_queries_is_not_a_violation(
        self, copy: Template, pool: StorePool
    ) -> None:
        store = await pool.acquire(db_path=copy.db_path)
        conn: sqlite3.Connection = await sqlite_db(store).read(lambda c: c)
        injected: list[str] = []

        def between_queries(statement: str) -> None:
            # Runs on the store's worker thread just before the messages query of the
            # snapshot starts: the context query has already read its rows.
            if injected or not statement.lstrip().startswith("SELECT id, seq, role"):
                return
            other = sqlite3.connect(copy.db_path, timeout=30, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                injected.append(append_tool_message(other, copy.session_id, in_context=True))
                other.execute("COMMIT")
            finally:
                other.close()

        conn.set_trace_callback(between_queries)
        try:
            assert isinstance(store.backend, SQLiteStore)
            report = await IntegrityChecker(store).run(copy.session_id)
        finally:
            conn.set_trace_callback(None)
            await store.close()
        assert injected, "the concurrent write did not happen"
        assert report.violations == []
        assert (await check(copy.db_path, copy.session_id)).ok  # and it is whole afterwards


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


class TestTheCheckCommand:
    def test_a_clean_store_exits_0_and_prints_the_throughput(self, copy: Template) -> None:
        result = invoke("check", "--db", copy.db_path)
        assert result.exit_code == 0, result.output
        assert "✓ no violations" in result.stdout
        assert "sessions/s" in result.stdout
        assert "Checked 1 session (" in result.stdout

    def test_violations_exit_1_with_a_table_by_kind(self, copy: Template) -> None:
        with tampering(copy.db_path) as conn:
            last_message_dropped(conn, copy.session_id)
            two_messages_swapped(conn, copy.session_id)
        before = database_checksum(copy.db_path)
        result = invoke("check", "--db", copy.db_path)
        assert result.exit_code == 1, result.output
        assert "lost_from_view" in result.stdout
        assert "context_out_of_order" in result.stdout
        assert result.stderr == ""
        assert database_checksum(copy.db_path) == before  # checking writes nothing
        assert run(["check", "--db", copy.db_path]) == 1

    def test_json_lists_every_violation_the_library_reports(self, copy: Template) -> None:
        with tampering(copy.db_path, drop_triggers=LINEAGE_TRIGGERS) as conn:
            lineage_deleted(conn, copy.session_id)
        library = asyncio.run(check(copy.db_path, None))
        result = invoke("check", "--db", copy.db_path, "--json")
        assert result.exit_code == 1
        data = json.loads(result.stdout)
        assert data["ok"] is False
        assert data["sessions_checked"] == 1
        assert data["by_kind"] == library.by_kind()
        assert len(data["violations"]) == len(library.violations) > 10
        assert {tuple(sorted(v)) for v in data["violations"]} == {
            ("detail", "kind", "object_id", "repairable", "session_id")
        }
        assert "plan" not in data and "repair" not in data

    def test_session_limits_the_check_to_one_session(self, copy: Template) -> None:
        other = asyncio.run(_other_session(copy.db_path))
        with tampering(copy.db_path) as conn:
            last_message_dropped(conn, copy.session_id)
        assert invoke("check", "--db", copy.db_path, "--session", other).exit_code == 0
        assert invoke("check", "--db", copy.db_path, "--session", copy.session_id).exit_code == 1
        data = json.loads(invoke("check", "--db", copy.db_path, "--json").stdout)
        assert data["sessions_checked"] == 2
        assert {v["session_id"] for v in data["violations"]} == {copy.session_id}

    def test_tokens_adds_the_token_estimate_check(self, copy: Template) -> None:
        with tampering(copy.db_path) as conn:
            inflated_token_estimate(conn, copy.session_id)
        assert invoke("check", "--db", copy.db_path).exit_code == 0
        flagged = invoke("check", "--db", copy.db_path, "--tokens")
        assert flagged.exit_code == 1
        assert "token_mismatch" in flagged.stdout


async def _other_session(db_path: str) -> str:
    pool = StorePool()
    try:
        session = await MnesisSession.create(
            model="fake/other", db_path=db_path, pool=pool, llm=FakeLLM(), config=NO_AUTO
        )
        await session.record("hello", "hi")
        await session.close()
    finally:
        await pool.close_all()
    return session.id
