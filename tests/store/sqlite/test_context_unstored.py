"""SQLite, migration m009: the neighbour context is indexed, not stored. An older
database migrates, searches as before, passes the integrity check, and its index holds
exactly the contexts history rebuilds (what a purge deletes with)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from mnesis.integrity.checker import IntegrityChecker
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, TextPart
from mnesis.store import ImmutableStore, StorePool
from mnesis.store.base import NewMessage, SearchFilter, SessionRecord
from mnesis.store.codec import encode_part
from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.shared.search_context import SESSION_PARTS_SELECT, rebuild_contexts
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS
from tests.store.contract.helpers import make_commit, message_items
from tests.store.sqlite.helpers import append_as_before, indexed_contexts, random_parts, tokens_of

_WORDS = "alpha beta gamma delta\nepsilon 中文 zeta naïve".split(" ")
_QUERIES = ("alpha", "gamma", "中文", "naive", "zeta")
_NAMES = [name for name, _ in MIGRATIONS]


def _history(sessions: list[str], count: int, seed: int) -> list[NewMessage]:
    rng = random.Random(seed)
    return [
        NewMessage(
            Message(
                id=new_id("msg"),
                session_id=rng.choice(sessions),
                role=rng.choice(["user", "assistant"]),
                created_at=1_748_772_000_000 + i * 3_600_000,
            ),
            random_parts(rng, _WORDS, 60, running_tools=True),
        )
        for i in range(count)
    ]


async def _older(path: str, sessions: list[str], pool: StorePool) -> None:
    """A database (of the migrations the caller left in place) and its sessions."""
    store = await pool.acquire(db_path=path)
    for sid in sessions:
        await store.create_session(SessionRecord(id=sid, model="m", created_at=1, updated_at=1))
    await pool.close_all()


async def _search(store: ImmutableStore, sessions: list[str]) -> list[object]:
    """Each query's hits, ranked and newest first: part, rank and context."""
    out: list[object] = []
    for word in _QUERIES:
        for newest in (False, True):
            hits = await store.search_text(
                query=SearchQuery(all_of=(Term.word(word),), newest_first=newest),
                scope="messages",
                where=SearchFilter(session_ids=sessions),
                limit=500,
            )
            out.append([(h.part_id, h.rank, h.context) for h in hits])
    return out


def _check_index(path: str, sessions: list[str]) -> None:
    """The index is consistent and holds exactly the contexts history rebuilds; the
    column holds none."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "INSERT INTO message_parts_fts (message_parts_fts, rank) VALUES ('integrity-check', 1)"
        )
        rebuilt: dict[int, str | None] = {}
        for sid in sessions:
            rebuilt.update(rebuild_contexts(conn.execute(SESSION_PARTS_SELECT, (sid,))))
        assert indexed_contexts(conn) == tokens_of(conn, rebuilt)
        stored = "SELECT count(*) FROM message_parts WHERE search_context IS NOT NULL"
        assert conn.execute(stored).fetchone()[0] == 0
    finally:
        conn.close()


def _indexed_rows(path: str) -> set[int]:
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "CREATE VIRTUAL TABLE temp.rows_vocab "
            "USING fts5vocab(main, message_parts_fts, instance)"
        )
        return {r[0] for r in conn.execute("SELECT DISTINCT doc FROM temp.rows_vocab")}
    finally:
        conn.close()


async def test_m009_clears_the_column_and_searches_exactly_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "old.db")
    sessions = [new_id("sess"), new_id("sess")]
    with monkeypatch.context() as patch:
        patch.setattr(
            sqlite_database, "MIGRATIONS", MIGRATIONS[: _NAMES.index("m009_context_unstored")]
        )
        await _older(path, sessions, StorePool())
        conn = sqlite3.connect(path)
        append_as_before(conn, _history(sessions, 150, seed=9))
        stored = conn.execute(
            "SELECT count(*) FROM message_parts WHERE search_context IS NOT NULL"
        ).fetchone()[0]
        conn.close()
        old = StorePool()
        found_before = await _search(await old.acquire(db_path=path), sessions)
        await old.close_all()
    assert stored > 100

    pool = StorePool()
    try:
        store = await pool.acquire(db_path=path)
        assert await _search(store, sessions) == found_before
        assert all(found_before)
        _check_index(path, sessions)
        for item in _history(sessions, 30, seed=10):
            await store.append_message(item.message, item.parts)
        await store.append_batch(_history(sessions, 30, seed=11))
        _check_index(path, sessions)
        report = await IntegrityChecker(store, deep=True).run()
        assert report.violations == []
        assert report.sessions_checked == 2
        # A compaction's marker is indexed by the per-row trigger, which clears the column.
        items = await message_items(store, sessions[1])
        await store.commit_compaction(make_commit(sessions[1], items[:4]))
        _check_index(path, sessions)
        await store.purge_session(sessions[0])
        assert any(await _search(store, sessions[1:]))
    finally:
        await pool.close_all()
    _check_index(path, sessions[1:])
    conn = sqlite3.connect(path)
    kept = {
        r[0] for r in conn.execute("SELECT rowid FROM message_parts WHERE text_content IS NOT NULL")
    }
    conn.close()
    # The purge gave the index the values each row was indexed with: no trace is left.
    assert _indexed_rows(path) == kept


def _raw_part(
    conn: sqlite3.Connection, message_id: str, sid: str, ordinal: int, part: MessagePart
) -> None:
    row = encode_part(part)
    conn.execute(
        "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
        "text_content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
        (new_id("part"), message_id, sid, ordinal, row["part_type"], row["content"],
         row["text_content"]),
    )  # fmt: skip


async def test_m009_gives_parts_indexed_by_m004_the_context_history_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "m003.db")
    sid = new_id("sess")
    with monkeypatch.context() as patch:
        patch.setattr(
            sqlite_database, "MIGRATIONS", MIGRATIONS[: _NAMES.index("m004_search_context")]
        )
        await _older(path, [sid], StorePool())
    conn = sqlite3.connect(path)
    with conn:
        first, second = new_id("msg"), new_id("msg")
        for seq, (message_id, role) in enumerate(((first, "user"), (second, "assistant")), 1):
            conn.execute(
                "INSERT INTO messages (id, session_id, seq, role, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (message_id, sid, seq, role, 1_748_772_000_000 + seq),
            )
        _raw_part(conn, first, sid, 0, TextPart(text="alpha asked"))
        _raw_part(conn, second, sid, 0, TextPart(text="beta answered"))
        # Appended to the older message after the newer one was written: m004 sees it as
        # a neighbour of the newer one's part, the writer of that part had not.
        _raw_part(conn, first, sid, 1, TextPart(text="gamma late"))
    conn.close()

    pool = StorePool()
    try:
        store = await pool.acquire(db_path=path)
        _check_index(path, [sid])
        hits = await store.search_text(
            query=SearchQuery(all_of=(Term.word("gamma"),), context_only=True),
            scope="messages",
            where=SearchFilter(session_ids=[sid]),
            limit=10,
        )
        assert hits == []
        await store.purge_session(sid)
    finally:
        await pool.close_all()
    assert _indexed_rows(path) == set()
