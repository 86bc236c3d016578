"""SQLite, migration m010: the context view is stored in ``context_slots`` with integer
keys, under a ``context_items`` view. A file written before migrates and reads exactly
as before (context items, built context, grep, the deep integrity check), a file opened
read-only before migrating reads as it did, dangling rows stay reported, and the
foreign keys the table had hold as triggers."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisConfig, StorePool
from mnesis.config import StoreConfig
from mnesis.context.builder import ContextBuilder
from mnesis.integrity import IntegrityChecker, ViolationKind
from mnesis.models.ids import new_id
from mnesis.models.model_info import ModelInfo
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.store import ImmutableStore
from mnesis.store.readonly import open_read_only
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS
from mnesis.tokens.estimator import TokenEstimator
from tests.compaction import run_in_fresh_loop
from tests.integrity.template import compacted_session

_NAMES = [name for name, _ in MIGRATIONS]
_BEFORE = MIGRATIONS[: _NAMES.index("m010_context_keys")]
_WORDS = ("test", "error", "fix", "file", "function")
_MODEL = ModelInfo(model_id="tiny", context_limit=32_000, max_output_tokens=1_000)


async def _observe(store: ImmutableStore, sid: str) -> dict[str, Any]:
    """Everything read through the context view: its items every way they are asked
    for, the context built from them, grep's placing of hits, the deep check."""
    ids = [m.message.id for m in await store.get_messages(sid)]
    items = await store.get_context_items(sid)
    built = await ContextBuilder(store, token_estimator=TokenEstimator(exact=False)).build(
        sid, _MODEL, "system", MnesisConfig()
    )
    engine = RetrievalEngine(store, sid)
    report = await IntegrityChecker(store, deep=True).run(sid)
    return {
        "items": items,
        "summaries": await store.get_context_items(sid, item_type="summary"),
        "messages": await store.get_context_items(sid, item_type="message"),
        "page": await store.get_context_items(
            sid, newest_first=True, before_position=items[-1].position, limit=7
        ),
        "summary_page": await store.get_context_items(
            sid, item_type="summary", newest_first=True, limit=2
        ),
        "total": await store.context_token_total(sid),
        "in_context": await store.messages_in_context(sid, ids),
        "covering": await store.covering_context_summaries(sid, ids),
        "built": (built.to_dicts(), built.item_ids, built.token_estimate, built.has_summary),
        "grep": [(await engine.grep(word)).model_dump() for word in _WORDS],
        "check": (report.violations, report.sessions_checked, report.messages_checked),
    }


@pytest.fixture
def older(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A compacted session in a file written before m010, and its ID."""
    path = str(tmp_path / "old.db")

    async def build() -> str:
        pool = StorePool()
        try:
            return await compacted_session(path, pool)
        finally:
            await pool.close_all()

    with monkeypatch.context() as patch:
        patch.setattr(sqlite_database, "MIGRATIONS", _BEFORE)
        sid = run_in_fresh_loop(build)
    yield path, sid


async def _observe_file(path: str, sid: str, *, migrations: list[Any]) -> dict[str, Any]:
    old = sqlite_database.MIGRATIONS
    sqlite_database.MIGRATIONS = migrations
    pool = StorePool()
    try:
        return await _observe(await pool.acquire(db_path=path), sid)
    finally:
        await pool.close_all()
        sqlite_database.MIGRATIONS = old


async def _observe_read_only(path: str, sid: str) -> dict[str, Any]:
    store = await open_read_only(StoreConfig(db_path=path))
    try:
        return await _observe(store, sid)
    finally:
        await store.close()


def _query(path: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    """Every row of ``sql`` on a plain connection to ``path``."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _applied(path: str) -> list[str]:
    return [r[0] for r in _query(path, "SELECT name FROM _mnesis_migrations ORDER BY name")]


async def test_an_older_file_migrates_and_reads_exactly_as_before(
    older: tuple[str, str],
) -> None:
    path, sid = older
    before = await _observe_file(path, sid, migrations=_BEFORE)
    assert before["summaries"] and before["messages"] and before["check"][0] == []
    assert any(r["groups"] for r in before["grep"])
    assert "m010_context_keys" not in _applied(path)

    # Read-only, the unmigrated file reads as it did and is left unmigrated.
    assert await _observe_read_only(path, sid) == before
    assert "m010_context_keys" not in _applied(path)

    after = await _observe_file(path, sid, migrations=MIGRATIONS)
    assert after == before
    kinds = dict(_query(path, "SELECT name, type FROM sqlite_master"))
    assert kinds["context_items"] == "view" and "old_context_items" not in kinds
    assert _query(path, "SELECT count(*) FROM context_slots") == [(len(before["items"]),)]

    assert await _observe_read_only(path, sid) == before


async def test_rows_naming_nothing_survive_the_migration_and_stay_reported(
    older: tuple[str, str],
) -> None:
    path, sid = older
    missing, lost_session = new_id("msg"), new_id("sess")
    ((top,),) = _query(path, "SELECT MAX(position) FROM context_items WHERE session_id = ?", sid)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.executemany(
        "INSERT INTO context_items (session_id, position, item_type, message_id, tokens, "
        "created_at) VALUES (?, ?, 'message', ?, 5, 0)",
        [(sid, top + 1, missing), (sid, top + 2, missing), (lost_session, 1, missing)],
    )
    conn.close()
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=path)
        report = await IntegrityChecker(store, deep=True).run(sid)
        items = await store.get_context_items(sid)
    finally:
        await pool.close_all()
    dangling = [v for v in report.violations if v.kind == ViolationKind.DANGLING_CONTEXT_ITEM]
    assert [v.detail for v in dangling] == [
        f"context position {p} points to a missing message" for p in (top + 1, top + 2)
    ]
    assert {v.object_id for v in dangling} == {"message_key:-1"}
    assert [i.position for i in items][-2:] == [top + 1, top + 2]
    lost = sorted(_query(path, "SELECT session_key, message_key FROM context_slots "
                               "WHERE session_key < 0 OR message_key < 0"))  # fmt: skip
    # The lost session's row has a negative session key too (one per missing ID).
    ((key,),) = _query(path, "SELECT rowid FROM sessions WHERE id = ?", sid)
    assert lost[1:] == [(key, -1), (key, -1)] and lost[0][0] < 0


async def test_purge_counts_and_removes_the_slots_of_the_session(
    older: tuple[str, str],
) -> None:
    path, sid = older
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=path)
        count = len(await store.get_context_items(sid))
        report = await store.purge_session(sid)
    finally:
        await pool.close_all()
    assert report.rows["context_items"] == count > 0
    assert _query(path, "SELECT count(*) FROM context_slots") == [(0,)]


_SUMMARY = "(SELECT summary_id FROM context_items WHERE summary_id IS NOT NULL LIMIT 1)"
_IN_CONTEXT = "(SELECT message_id FROM context_items WHERE message_id IS NOT NULL LIMIT 1)"
_BARE_SESSION = (
    "INSERT INTO sessions (id, model, created_at, updated_at) VALUES ('sess_bare', 'm', 1, 1)",
    "INSERT INTO context_items (session_id, position, item_type, summary_id, tokens, "
    f"created_at) VALUES ('sess_bare', 1, 'summary', {_SUMMARY}, 1, 0)",
)
"""A session whose context holds one summary and which has no messages (so only the
context's key refers to it)."""


class TestForeignKeysAsTriggers:
    """The table's foreign keys became triggers: they refuse while ``foreign_keys`` is
    on, like a foreign key, and not while it is off."""

    @pytest.fixture
    def migrated(self, older: tuple[str, str]) -> str:
        path = older[0]

        async def migrate() -> None:
            pool = StorePool()
            try:
                await pool.acquire(db_path=path)
            finally:
                await pool.close_all()

        run_in_fresh_loop(migrate)
        return path

    @staticmethod
    def _run(path: str, statements: tuple[str, ...], *, foreign_keys: bool) -> None:
        """Run ``statements`` with the append-only delete guards of messages and sessions
        dropped, then roll everything back."""
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute(f"PRAGMA foreign_keys = {int(foreign_keys)}")
            conn.execute("BEGIN")
            conn.execute("DROP TRIGGER messages_no_delete")
            conn.execute("DROP TRIGGER sessions_no_delete")
            try:
                for statement in statements:
                    conn.execute(statement)
            finally:
                conn.execute("ROLLBACK")
        finally:
            conn.close()

    @pytest.mark.parametrize(
        "statements",
        [
            (f"DELETE FROM messages WHERE id = {_IN_CONTEXT}",),
            (*_BARE_SESSION, "DELETE FROM sessions WHERE id = 'sess_bare'"),
            (*_BARE_SESSION, "UPDATE sessions SET id = 'sess_other' WHERE id = 'sess_bare'"),
            (
                "INSERT INTO context_items (session_id, position, item_type, message_id, "
                "tokens, created_at) SELECT id, 100000, 'message', 'msg_missing', 1, 0 "
                "FROM sessions LIMIT 1",
            ),
            (
                "INSERT INTO context_items (session_id, position, item_type, summary_id, "
                f"tokens, created_at) VALUES ('sess_missing', 1, 'summary', {_SUMMARY}, 1, 0)",
            ),
        ],
        ids=["message", "session", "session id", "new message key", "new session key"],
    )
    def test_a_key_left_naming_nothing_is_refused_with_foreign_keys_on(
        self, migrated: str, statements: tuple[str, ...]
    ) -> None:
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY constraint failed"):
            self._run(migrated, statements, foreign_keys=True)
        if "INSERT INTO context_items" not in statements[-1]:
            # Off, the same change is made (an insert cannot be: its key would be NULL).
            self._run(migrated, statements, foreign_keys=False)
