"""SQLite: the neighbour context a search hit carries is the one its part was indexed
with (rebuilt at query time, not read from a stored column)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import TextPart
from mnesis.store import ImmutableStore, StorePool
from mnesis.store.base import NewMessage, SearchFilter, SearchHit, SessionRecord
from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.shared.search_context import SESSION_PARTS_SELECT, rebuild_contexts
from tests.store.sqlite.helpers import indexed_contexts, random_parts, tokens_of

_WORDS = "alpha beta gamma\ndelta epsilon 中文 zeta".split(" ")


def _message(rng: random.Random, session_id: str) -> Message:
    return Message(
        id=new_id("msg"),
        session_id=session_id,
        role=rng.choice(["user", "assistant", "tool"]),
        created_at=rng.randrange(10**12, 2 * 10**12),
        is_summary=rng.random() < 0.05,
    )


async def _history(path: str, sessions: list[str], steps: int, seed: int) -> None:
    """Random appends through every write path, by two stores on one file."""
    rng = random.Random(seed)
    pools = [StorePool(), StorePool()]
    try:
        stores = [await p.acquire(db_path=path) for p in pools]
        for sid in sessions:
            await stores[0].create_session(SessionRecord(id=sid, model="m"))
        for step in range(steps):
            store = rng.choice(stores)
            sid = rng.choice(sessions)
            pick = rng.random()
            if pick < 0.1:
                await store.append_batch(
                    [
                        NewMessage(_message(rng, sid), random_parts(rng, _WORDS, 80))
                        for _ in range(rng.randrange(1, 5))
                    ]
                )
            elif pick < 0.2:
                await store.append_messages(
                    [NewMessage(_message(rng, sid), random_parts(rng, _WORDS, 80))]
                )
            elif pick < 0.3 and step:
                found = await store.get_messages(sid)
                if found:
                    # A part appended to an older message after newer ones were written.
                    target = rng.choice(found[-8:]).message.id
                    await store.append_parts(target, [TextPart(text=f"late {step} beta")])
            else:
                await store.append_message(_message(rng, sid), random_parts(rng, _WORDS, 80))
    finally:
        for p in pools:
            await p.close_all()


def rebuilt(conn: sqlite3.Connection, sessions: list[str]) -> dict[int, str | None]:
    """Every indexed part's context, rebuilt from history."""
    out: dict[int, str | None] = {}
    for sid in sessions:
        out.update(rebuild_contexts(conn.execute(SESSION_PARTS_SELECT, (sid,))))
    return out


async def _hits(store: ImmutableStore, sessions: list[str]) -> list[SearchHit]:
    query = SearchQuery(any_of=tuple(Term.word(w) for w in ("alpha", "beta", "late", "zeta")))
    hits: list[SearchHit] = []
    for sid in sessions:
        where = SearchFilter(session_ids=[sid])
        for newest in (False, True):
            q = SearchQuery(any_of=query.any_of, newest_first=newest)
            hits += await store.search_text(query=q, scope="messages", where=where, limit=400)
    return hits


async def test_a_hit_carries_the_context_its_part_was_indexed_with(
    tmp_path: Path, pool: StorePool
) -> None:
    path = str(tmp_path / "hits.db")
    sessions = [new_id("sess") for _ in range(3)]
    await _history(path, sessions, 250, seed=23)
    store = await pool.acquire(db_path=path)
    try:
        hits = await _hits(store, sessions)
        ids = [m.message.id for sid in sessions for m in await store.get_messages(sid)]
        replies = await store.replies_to(ids)
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    try:
        expected = rebuilt(conn, sessions)
        # What the writer indexed is what history rebuilds, part for part.
        assert indexed_contexts(conn) == tokens_of(conn, expected)
    finally:
        conn.close()
    with_context = [h for h in [*hits, *replies.values()] if h.context is not None]
    assert len(with_context) > 200
    assert sum(1 for h in with_context if "\n" in (h.context or "")) > 100
    for hit in [*hits, *replies.values()]:
        assert hit.context == expected[hit.key], hit
