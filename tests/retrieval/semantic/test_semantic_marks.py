"""Indexing reads only what is new: a round asks for the rows above the key up to which
every text has a vector (its mark), and yet no text is ever left without one (parts
appended to older messages, two writers on one session)."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import psycopg
import pytest

from mnesis import StorePool, TextPart
from mnesis.retrieval.semantic import MODEL_ID
from mnesis.retrieval.semantic import index as semantic_index
from mnesis.retrieval.semantic.index import index_pending
from mnesis.retrieval.semantic.model import load_embedder
from mnesis.store.immutable import ImmutableStore
from mnesis.store.vectors import PendingText, VectorKind, VectorStore
from tests.backends import fetch
from tests.store.contract.helpers import append_text, make_commit, new_session

TEXTS = [
    "the billing dashboard looks fine today",
    "can someone review the ledger pull request",
    "lunch order is in, the noodle place again",
    "reminder: retro for payouts on Thursday",
]
_TEXT_PARTS = (
    "SELECT p.id FROM message_parts p JOIN messages m ON m.id = p.message_id "
    "WHERE p.session_id = ? AND p.part_type = 'text' AND NOT m.is_summary"
)


def _vectors(store: ImmutableStore) -> VectorStore:
    vectors = store.vectors
    assert vectors is not None
    return vectors


def _drop_vectors(location: str, session_id: str) -> None:
    """Delete the session's part vectors behind the store's back (derived data)."""
    sql = "DELETE FROM part_vectors WHERE session_id = ?"
    if location.startswith("postgresql"):
        with psycopg.connect(location, autocommit=True) as pg:
            pg.execute(sql.replace("?", "%s"), (session_id,))
        return
    with sqlite3.connect(location, timeout=30) as conn:
        conn.execute(sql, (session_id,))


async def _index(store: ImmutableStore, session_id: str) -> int:
    report = await index_pending(store, _vectors(store), load_embedder(), [session_id])
    assert report.complete
    return report.embedded


def _missing(location: str, session_id: str) -> set[str]:
    """Text parts of the session with no vector."""
    texts = {r[0] for r in fetch(location, _TEXT_PARTS, session_id)}
    stored = fetch(
        location,
        "SELECT part_id FROM part_vectors WHERE session_id = ? AND model = ?",
        session_id,
        MODEL_ID,
    )
    return texts - {r[0] for r in stored}


async def test_pending_returns_the_rows_above_a_key_in_key_order(
    db_path: str, pool: StorePool
) -> None:
    store = await pool.acquire(db_path=db_path)
    session_id = await new_session(store)
    vectors = _vectors(store)
    assert await vectors.last_key(session_id, "message") == 0
    for text in TEXTS:
        await append_text(store, session_id, text)
    first = await vectors.pending(session_id, MODEL_ID, "message", 10)
    assert [t.text for t in first] == TEXTS
    keys = [t.key for t in first]
    assert keys == sorted(keys) and len(set(keys)) == 4
    assert await vectors.last_key(session_id, "message") == keys[-1]
    above = await vectors.pending(session_id, MODEL_ID, "message", 10, after_key=keys[1])
    assert [t.text for t in above] == TEXTS[2:]
    # A part appended to the oldest message gets a key above every earlier one.
    await store.append_parts(first[0].id, [TextPart(text="and the invoices too")])
    late = await vectors.pending(session_id, MODEL_ID, "message", 10, after_key=keys[-1])
    assert [(t.id, t.text) for t in late] == [(first[0].id, "and the invoices too")]
    assert await vectors.last_key(session_id, "message") == late[0].key > keys[-1]
    items = await store.get_context_items(session_id)
    await store.commit_compaction(make_commit(session_id, items[:2], content="a summary"))
    summaries = await vectors.pending(session_id, MODEL_ID, "summary", 10)
    assert [s.text for s in summaries] == ["a summary"]
    assert await vectors.last_key(session_id, "summary") == summaries[0].key
    assert (
        await vectors.pending(session_id, MODEL_ID, "summary", 10, after_key=summaries[0].key) == []
    )


async def test_a_later_round_reads_only_the_rows_above_its_mark(
    db_path: str, pool: StorePool
) -> None:
    store = await pool.acquire(db_path=db_path)
    session_id = await new_session(store)
    for text in TEXTS:
        await append_text(store, session_id, text)
    assert await _index(store, session_id) == 4
    # The old vectors vanish behind the store's back: a round that re-read the whole
    # history (the anti-join of every text against its vector) would embed them again.
    _drop_vectors(store.location, session_id)
    await append_text(store, session_id, "the deploy key lives in vault")
    assert await _index(store, session_id) == 1
    assert await _index(store, session_id) == 0
    assert len(_missing(store.location, session_id)) == 4
    # A new process (no marks yet) makes one full pass and finds them.
    semantic_index._marks.clear()
    assert await _index(store, session_id) == 4
    assert _missing(store.location, session_id) == set()


async def test_no_text_is_skipped_with_late_parts_and_two_writers(
    db_path: str, pool: StorePool
) -> None:
    other_pool = StorePool()
    one = await pool.acquire(db_path=db_path)
    two = await other_pool.acquire(db_path=db_path)
    session_id = await new_session(one)
    oldest = await append_text(one, session_id, "first words of the session")
    await _index(one, session_id)

    async def write(store: ImmutableStore, tag: str, turns: int) -> None:
        for turn in range(turns):
            message_id = await append_text(store, session_id, f"{tag} turn {turn}")
            await store.append_parts(oldest, [TextPart(text=f"{tag} late note {turn}")])
            await store.append_parts(message_id, [TextPart(text=f"{tag} second part {turn}")])

    async def rounds(count: int) -> None:
        for _ in range(count):
            await _index(one, session_id)
            await asyncio.sleep(0)

    await asyncio.gather(write(one, "one", 12), write(two, "two", 12), rounds(20))
    await _index(one, session_id)
    assert _missing(one.location, session_id) == set()
    assert len(fetch(one.location, _TEXT_PARTS, session_id)) == 1 + 2 * 12 * 3
    # Only a late part, no new message: the session's message count stays the same.
    await two.append_parts(oldest, [TextPart(text="the very last note")])
    assert await _index(one, session_id) == 1
    assert _missing(one.location, session_id) == set()
    await other_pool.close_all()


async def test_a_mark_past_the_database_is_dropped(db_path: str, pool: StorePool) -> None:
    """A mark from another copy of the file (put back from a backup, say) is higher
    than anything in this one: the round starts over instead of skipping texts."""
    store = await pool.acquire(db_path=db_path)
    session_id = await new_session(store)
    for text in TEXTS:
        await append_text(store, session_id, text)
    items = await store.get_context_items(session_id)
    await store.commit_compaction(make_commit(session_id, items[:2], content="a summary"))
    kinds: tuple[VectorKind, ...] = ("message", "summary")
    for kind in kinds:
        semantic_index._marks[(store.location, session_id, MODEL_ID, kind)] = (0, 10**9)
    assert await _index(store, session_id) == 5


async def test_new_texts_come_first_and_the_history_is_walked_in_bounded_ranges(
    db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process's first call for a session starts with an empty range at the highest
    key: the texts above it are read first, then the history below it, newest range
    first, one statement per ``SPAN`` keys at most (so a time budget can stop it)."""
    monkeypatch.setattr(semantic_index, "SPAN", 3)
    store = await pool.acquire(db_path=db_path)
    session_id = await new_session(store)
    for index in range(10):
        await append_text(store, session_id, f"{TEXTS[index % 4]} ({index})")
    vectors = _vectors(store)
    middle = await vectors.last_key(session_id, "message")
    mark = (store.location, session_id, MODEL_ID, "message")
    semantic_index._marks[mark] = (middle, middle)  # as a first call that was cut short
    for index in range(10, 14):
        await append_text(store, session_id, f"{TEXTS[index % 4]} ({index})")
    last = await vectors.last_key(session_id, "message")
    ranges: list[tuple[int, int | None]] = []
    read = vectors.pending

    async def recording(*args: Any, **kwargs: Any) -> list[PendingText]:
        ranges.append((kwargs["after_key"], kwargs["up_to_key"]))
        return await read(*args, **kwargs)

    monkeypatch.setattr(vectors, "pending", recording)
    report = await index_pending(store, vectors, load_embedder(), [session_id])
    assert report.complete and report.embedded == 14
    assert ranges[0] == (middle, last)
    walk = [r for r in ranges[1:] if r[1] is not None and r[1] <= middle]
    assert [r[1] for r in walk] == sorted((r[1] for r in walk), reverse=True)
    assert all(up - after <= 3 for after, up in walk if up is not None)
    assert walk[0][1] == middle and walk[-1][0] == 0
    assert semantic_index._marks[mark] == (0, last)
    assert _missing(store.location, session_id) == set()
