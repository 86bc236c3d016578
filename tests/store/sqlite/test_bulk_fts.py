"""SQLite: a batch append indexes its parts together (the trigger held off, m008), and the
full-text index it leaves is the one appending the same messages one by one leaves."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from mnesis.integrity.checker import IntegrityChecker
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import TextPart
from mnesis.store import ImmutableStore, StorePool
from mnesis.store.base import NewMessage, SearchFilter, SessionRecord
from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS
from tests.store.sqlite.helpers import append_as_before, random_parts

_WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa 中文 naïve".split()
_QUERIES = ("alpha", "delta", "中文", "kappa", "naive", "theta")


def _batch(sessions: list[str], count: int, seed: int) -> list[NewMessage]:
    """Interleaved messages of the sessions: text, reasoning and tool parts (running and
    completed), some with no indexed text at all."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        parts = random_parts(rng, _WORDS, 60, running_tools=True)
        message = Message(
            id=new_id("msg"),
            session_id=sessions[i % len(sessions)],
            role="user" if i % 2 == 0 else "assistant",
            created_at=1_748_772_000_000 + i * 61_000,
        )
        out.append(NewMessage(message, parts, None))
    return out


async def _open(path: str, sessions: list[str]) -> ImmutableStore:
    store = await ImmutableStore.open(path)
    for sid in sessions:
        await store.create_session(SessionRecord(id=sid, model="m", created_at=1, updated_at=1))
    return store


async def _search(
    store: ImmutableStore, sessions: list[str]
) -> dict[str, list[tuple[str | None, str | None, float]]]:
    """Each query's hits in the order returned: part, context and rank."""
    out = {}
    for word in _QUERIES:
        hits = await store.search_text(
            query=SearchQuery(all_of=(Term.word(word),)),
            scope="messages",
            where=SearchFilter(session_ids=sessions),
            limit=1000,
        )
        out[word] = [(h.part_id, h.context, h.rank) for h in hits]
    return out


def _index(path: str, *, migrated: bool = True) -> list[tuple[object, ...]]:
    """Every token of the full-text index: term, part, column and position (by part ID,
    not row key), after the index's own integrity check."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "INSERT INTO message_parts_fts (message_parts_fts, rank) VALUES ('integrity-check', 1)"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, message_parts_fts, instance)"
        )
        rows = conn.execute(
            "SELECT v.term, p.id, v.col, v.offset FROM temp.vocab v "
            "JOIN message_parts p ON p.rowid = v.doc ORDER BY 1, 2, 3, 4"
        ).fetchall()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert ("fts_deferred" in tables) is migrated
        if migrated:
            assert conn.execute("SELECT count(*) FROM fts_deferred").fetchone()[0] == 0
        return rows
    finally:
        conn.close()


async def test_a_batch_indexes_exactly_what_one_by_one_appends_index(tmp_path: Path) -> None:
    sessions = [new_id("sess"), new_id("sess")]
    paths = [str(tmp_path / "batch.db"), str(tmp_path / "single.db")]
    batched, single = [await _open(p, sessions) for p in paths]
    try:
        first = _batch(sessions, 120, seed=1)
        second = _batch(sessions, 80, seed=2)
        # Two batches: the second one's neighbours come from the first.
        await batched.append_batch(first)
        await batched.append_batch(second)
        for item in first + second:
            await single.append_message(item.message, item.parts, in_context=item.in_context)
        found = [await _search(s, sessions) for s in (batched, single)]
        reports = [await IntegrityChecker(s, deep=True).run() for s in (batched, single)]
    finally:
        await batched.close()
        await single.close()
    assert found[0] == found[1]
    assert all(found[0].values())
    assert [r.violations for r in reports] == [[], []]
    assert reports[0].sessions_checked == reports[1].sessions_checked == 2
    index = _index(paths[0])
    assert len(index) > 5000
    assert index == _index(paths[1])


async def test_a_batch_that_fails_leaves_appends_indexed_by_the_trigger(tmp_path: Path) -> None:
    sid = new_id("sess")
    store = await _open(str(tmp_path / "fail.db"), [sid])
    try:
        taken = TextPart(text="first kappa")
        first = Message(id=new_id("msg"), session_id=sid, role="user", created_at=1)
        await store.append_message(first, [taken])
        clash = _batch([sid], 3, seed=3)
        clash[-1].parts.append(TextPart(id=taken.id, text="clash"))
        # The part insert fails after the batch held the trigger off: all rolled back.
        with pytest.raises(Exception, match="UNIQUE"):
            await store.append_batch(clash)
        later = Message(id=new_id("msg"), session_id=sid, role="assistant", created_at=2)
        await store.append_message(later, [TextPart(text="later kappa")])
        hits = await store.search_text(
            query=SearchQuery(all_of=(Term.word("kappa"),)),
            scope="messages",
            where=SearchFilter(session_ids=[sid]),
            limit=10,
        )
        assert {h.id for h in hits} == {first.id, later.id}
        assert await store.count_messages(sid) == 2
    finally:
        await store.close()
    _index(str(tmp_path / "fail.db"))


async def test_m008_keeps_an_existing_index_and_its_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = [new_id("sess"), new_id("sess")]
    path = str(tmp_path / "old.db")
    before = [name for name, _ in MIGRATIONS].index("m008_bulk_fts")
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_database, "MIGRATIONS", MIGRATIONS[:before])
        old = StorePool()
        store = await old.acquire(db_path=path)
        for sid in sessions:
            await store.create_session(SessionRecord(id=sid, model="m"))
        await old.close_all()
        # Appended as a store of the previous release did: the per-row trigger indexes
        # each part.
        conn = sqlite3.connect(path)
        append_as_before(conn, _batch(sessions, 60, seed=4))
        conn.close()
        store = await old.acquire(db_path=path)
        found_before = await _search(store, sessions)
        await old.close_all()
    index_before = _index(path, migrated=False)
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=path)
        assert await _search(store, sessions) == found_before
        assert _index(path) == index_before
        await store.append_batch(_batch(sessions, 30, seed=5))
        grown = await _search(store, sessions)
    finally:
        await pool.close_all()
    for word in ("alpha", "delta"):
        assert {h[0] for h in found_before[word]} < {h[0] for h in grown[word]}
    _index(path)
