"""Vectors stored and cached as int8 with a scale each: a quarter of the bytes, the same
neighbours; rows stored as float32 before are read next to them."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
import pytest

from mnesis import StorePool
from mnesis.errors import StoreCorruptError
from mnesis.retrieval.semantic import MODEL_ID, codec, search
from mnesis.retrieval.semantic.index import index_pending
from mnesis.retrieval.semantic.model import DIM, Embedder, load_embedder
from mnesis.retrieval.semantic.search import DenseHit, dense_search
from mnesis.store.immutable import ImmutableStore
from mnesis.store.shared.vectors import PUT, put_row
from mnesis.store.vectors import VectorStore
from tests.backends import fetch
from tests.store.contract.helpers import append_text, new_session

FACTS = [
    "Amara's kids start at the Riverside school in September",
    "Omar bought a used Volvo estate for the commute",
    "the deploy key lives in vault under ops/deploy",
    "Priya adopted a puppy last weekend",
    "the billing dashboard looks fine today",
    "lunch order is in, the noodle place again",
]


def _unit(rows: int, seed: int = 3) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, DIM)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _vectors(store: ImmutableStore) -> VectorStore:
    vectors = store.vectors
    assert vectors is not None
    return vectors


def test_a_stored_vector_takes_388_bytes_and_keeps_its_cosines() -> None:
    matrix = _unit(500)
    blobs = codec.encode(matrix)
    assert {len(b) for b in blobs} == {codec.INT8_BYTES} == {DIM + 4}
    values, scales = codec.decode(blobs)
    assert values.dtype == np.int8 and scales.dtype == np.float32
    query = _unit(1, seed=9)[0]
    exact = matrix @ query
    approx = codec.scores(values, scales, query)
    assert np.abs(approx - exact).max() < 0.003
    assert np.array_equal(np.argsort(-approx)[:5], np.argsort(-exact)[:5])
    zero = codec.decode(codec.encode(np.zeros((1, DIM), dtype=np.float32)))
    assert not zero[0].any() and zero[1][0] == 1.0


def test_float32_rows_are_read_as_the_same_int8_rows() -> None:
    matrix = _unit(4)
    legacy = [row.astype("<f4").tobytes() for row in matrix]
    assert {len(b) for b in legacy} == {codec.FLOAT32_BYTES}
    mixed = [legacy[0], codec.encode(matrix[1:2])[0], legacy[2], codec.encode(matrix[3:])[0]]
    values, scales = codec.decode(mixed)
    want_values, want_scales = codec.decode(codec.encode(matrix))
    assert np.array_equal(values, want_values) and np.array_equal(scales, want_scales)


def test_a_vector_of_another_length_is_a_typed_error() -> None:
    with pytest.raises(StoreCorruptError, match="100 bytes"):
        codec.decode([codec.encode(_unit(1))[0], b"\0" * 100])


async def _stored_session(store: ImmutableStore) -> tuple[str, list[str]]:
    session_id = await new_session(store)
    ids = [await append_text(store, session_id, text) for text in FACTS]
    return session_id, ids


@dataclass
class _Facts:
    """A store holding a session of :data:`FACTS`, its message IDs, vectors, embedder."""

    store: ImmutableStore
    session_id: str
    ids: list[str]
    vectors: VectorStore
    embedder: Embedder

    async def dense(self, question: str, limit: int, location: str | None) -> list[DenseHit]:
        """The session's texts nearest to ``question`` (``location``: through the cache)."""
        query = self.embedder.embed([question])[0]
        return await dense_search(
            self.vectors, MODEL_ID, query, [self.session_id], ["message"], limit, location=location
        )


async def _indexed_facts(pool: StorePool, db_path: str) -> _Facts:
    """A session of :data:`FACTS` whose texts all have vectors."""
    store = await pool.acquire(db_path=db_path)
    session_id, ids = await _stored_session(store)
    facts = _Facts(store, session_id, ids, _vectors(store), load_embedder())
    await index_pending(store, facts.vectors, facts.embedder, [session_id])
    return facts


async def test_new_vectors_are_stored_as_int8_and_old_float32_rows_still_found(
    db_path: str, pool: StorePool
) -> None:
    store = await pool.acquire(db_path=db_path)
    session_id, ids = await _stored_session(store)
    vectors = _vectors(store)
    embedder = load_embedder()
    # The first three as a store written before the int8 encoding kept them.
    old = await vectors.pending(session_id, MODEL_ID, "message", 3)
    matrix = embedder.embed([t.text for t in old])
    await vectors.put(
        MODEL_ID, [(t, r.astype("<f4").tobytes()) for t, r in zip(old, matrix, strict=True)]
    )
    assert (await index_pending(store, vectors, embedder, [session_id])).embedded == 3
    sizes = fetch(
        store.location,
        "SELECT length(vector) FROM part_vectors WHERE session_id = ? ORDER BY id",
        session_id,
    )
    assert [s[0] for s in sizes] == [codec.FLOAT32_BYTES] * 3 + [codec.INT8_BYTES] * 3
    for location in (store.location, None):  # cached, streamed
        for index, question in enumerate(
            [
                "where will Amara's children study",
                "what car did Omar get",
                "where is the deploy key",
                "what pet does Priya have",
            ]
        ):
            query = embedder.embed([question])[0]
            hits = await dense_search(
                vectors, MODEL_ID, query, [session_id], ["message"], 3, location=location
            )
            assert hits[0].id == ids[index], (location, question)


async def test_the_cache_follows_new_vectors_and_a_purge(db_path: str, pool: StorePool) -> None:
    facts = await _indexed_facts(pool, db_path)
    where = facts.store.location
    key = (where, facts.session_id, "message", MODEL_ID)

    async def top(question: str) -> str:
        hits = await facts.dense(question, 1, where)
        return hits[0].id if hits else ""

    assert await top("where will Amara's children study") == facts.ids[0]
    assert search._cache[key].count == len(FACTS)
    late = await append_text(facts.store, facts.session_id, "Ines is allergic to peanuts")
    await index_pending(facts.store, facts.vectors, facts.embedder, [facts.session_id])
    assert await top("what food can Ines not eat") == late
    assert search._cache[key].count == len(FACTS) + 1
    await facts.store.purge_session(facts.session_id)
    assert await top("what food can Ines not eat") == ""
    assert search._cache[key].count == 0


async def test_a_session_too_big_for_the_cache_is_streamed(
    db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = await _indexed_facts(pool, db_path)
    monkeypatch.setattr(search, "CACHE_BYTES", 3 * search.ROW_BYTES)
    hits = await facts.dense("what car did Omar get", 2, facts.store.location)
    assert hits[0].id == facts.ids[1]
    assert (facts.store.location, facts.session_id, "message", MODEL_ID) not in search._cache


async def test_large_entries_are_scored_off_the_event_loop_with_the_same_result(
    db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = await _indexed_facts(pool, db_path)
    threads: list[int] = []
    scores = codec.scores

    def recording(*args: np.ndarray) -> np.ndarray:
        threads.append(threading.get_ident())
        return scores(*args)

    monkeypatch.setattr(codec, "scores", recording)
    found = []
    for inline in (10_000, 0):
        monkeypatch.setattr(search, "INLINE_ROWS", inline)
        hits = await facts.dense("where is the deploy key", 4, facts.store.location)
        found.append([(h.id, round(h.score, 6)) for h in hits])
    assert found[0] == found[1] and found[0][0][0] == facts.ids[2]
    loop_thread = threading.get_ident()
    assert threads[0] == loop_thread and threads[1] != loop_thread


@pytest.mark.postgres
async def test_the_cache_misses_no_vector_of_a_writer_that_commits_late(
    pg_url: str, pool: StorePool
) -> None:
    """(PostgreSQL: SQLite has one writer at a time.) Vector keys grow in commit order
    within a session: a writer's transaction holds the session (as ``put`` does) while
    it stores a vector, so a second ``put`` waits for it instead of committing a higher
    key first. The cache reads above the key it has, and would never see a lower key
    that committed after its read."""
    store = await pool.acquire(db_path=pg_url)
    session_id = await new_session(store)
    for text in FACTS[:3]:
        await append_text(store, session_id, text)
    pending = await _vectors(store).pending(session_id, MODEL_ID, "message", 10)
    blobs = codec.encode(_unit(len(pending)))
    where = store.location
    query = _unit(1, seed=5)[0]

    async def cached_count() -> int:
        await dense_search(
            _vectors(store), MODEL_ID, query, [session_id], ["message"], 3, location=where
        )
        return search._cache[(where, session_id, "message", MODEL_ID)].count

    await _vectors(store).put(MODEL_ID, [(pending[0], blobs[0])])
    assert await cached_count() == 1
    late = put_row(MODEL_ID, pending[1], blobs[1])
    with _open_write(where, session_id) as write:
        write(PUT["message"], late)  # holds the session until the block ends
        second = asyncio.create_task(_vectors(store).put(MODEL_ID, [(pending[2], blobs[2])]))
        await asyncio.sleep(0.5)
        assert await cached_count() == 1
    await second
    assert await cached_count() == 3


@contextlib.contextmanager
def _open_write(location: str, session_id: str) -> Iterator[Callable[[str, Sequence[Any]], None]]:
    """A raw write transaction that locks the session first, as the store's writes do;
    committed when the block ends."""
    with psycopg.connect(location) as pg:
        pg.execute("SELECT 1 FROM sessions WHERE id = %s FOR NO KEY UPDATE", (session_id,))
        yield lambda sql, args: pg.execute(sql.replace("?", "%s"), args)  # type: ignore[arg-type]
        pg.commit()
