"""Dense search: brute-force cosine over the stored vectors of the searched sessions.

Vectors are unit length, so cosine is a dot product; a message scores as its best
text part. Memory is bounded two ways:

* a session's vectors are kept in a per-process cache (``CACHE_BYTES`` in all, least
  recently used out first) and refreshed incrementally: only rows above the cached
  key are read, and a changed row count (a purge, a concurrent writer) rebuilds it;
* a session whose vectors do not fit the cache is streamed in chunks of ``CHUNK``
  rows (about 6 MB) and only the best ``k`` are kept after each chunk.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mnesis.retrieval.semantic.model import DIM
from mnesis.store.vectors import StoredVector, VectorKind, VectorStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["CACHE_BYTES", "CHUNK", "DenseHit", "dense_search"]

CHUNK = 4096
CACHE_BYTES = 256 * 2**20
"""Vectors kept in memory per process, all sessions together (about 175k vectors, so a
100k-message session is searched in memory: ~30 ms against ~1.5-3 s streamed)."""


@dataclass(frozen=True, slots=True)
class DenseHit:
    """A message or summary close to the query (``score``: cosine similarity)."""

    kind: VectorKind
    id: str
    session_id: str
    score: float
    part_id: str | None


@dataclass
class _Session:
    """The cached vectors of one session, kind and model."""

    last_key: int = 0
    rows: list[StoredVector] = field(default_factory=list)
    """The rows, without their vectors (those are in ``matrix``)."""
    matrix: npt.NDArray[np.float32] | None = None
    times: npt.NDArray[np.int64] | None = None


_cache: OrderedDict[tuple[str, str, str, str], _Session] = OrderedDict()


async def dense_search(
    vectors: VectorStore,
    model: str,
    query: npt.NDArray[np.float32],
    session_ids: Sequence[str],
    kinds: Sequence[VectorKind],
    k: int,
    *,
    since: int | None = None,
    until: int | None = None,
    exclude_ids: set[str] | frozenset[str] = frozenset(),
    location: str | None = None,
) -> list[DenseHit]:
    """The ``k`` messages/summaries of ``session_ids`` closest to ``query``, best first.

    ``location`` (the store's) enables the cache; without it every call streams."""
    best: dict[tuple[VectorKind, str], DenseHit] = {}
    for session_id in session_ids:
        for kind in kinds:
            cached = None
            if location is not None:
                cached = await _cached(vectors, (location, session_id, kind, model))
            if cached is not None:
                _score_cached(cached, query, k, since, until, exclude_ids, best)
            else:
                await _score_streamed(
                    vectors, model, query, session_id, kind, k, since, until, exclude_ids, best
                )
    return sorted(best.values(), key=lambda h: -h.score)[:k]


async def _cached(vectors: VectorStore, key: tuple[str, str, str, str]) -> _Session | None:
    """The session's vectors, brought up to date; None when they do not fit the cache."""
    import numpy as np

    _, session_id, kind, model = key
    vector_kind: VectorKind = "message" if kind == "message" else "summary"
    total = await vectors.count(session_id, model, vector_kind)
    if total * DIM * 4 > CACHE_BYTES:
        _cache.pop(key, None)
        return None
    entry = _cache.pop(key, None) or _Session()
    if total < len(entry.rows):
        entry = _Session()
    if total > len(entry.rows):
        new: list[StoredVector] = []
        while True:
            rows = await vectors.scan(
                session_id, model, vector_kind, after_key=entry.last_key, limit=CHUNK
            )
            new.extend(rows)
            if rows:
                entry.last_key = rows[-1].key
            if len(rows) < CHUNK:
                break
        if len(entry.rows) + len(new) != total:
            # A row below the cached key appeared (concurrent writers): read it all again.
            _cache.pop(key, None)
            return await _cached(vectors, key) if entry.rows else None
        added = _matrix(new)
        entry.rows.extend(replace(r, vector=b"") for r in new)
        entry.matrix = added if entry.matrix is None else np.vstack([entry.matrix, added])
        stamps = np.array([r.created_at for r in new], dtype=np.int64)
        entry.times = stamps if entry.times is None else np.concatenate([entry.times, stamps])
    _cache[key] = entry
    _evict()
    return entry


def _evict() -> None:
    size = sum(len(e.rows) for e in _cache.values()) * DIM * 4
    while size > CACHE_BYTES and len(_cache) > 1:
        _, oldest = _cache.popitem(last=False)
        size -= len(oldest.rows) * DIM * 4


def _matrix(rows: list[StoredVector]) -> npt.NDArray[np.float32]:
    import numpy as np

    flat = np.frombuffer(b"".join(r.vector for r in rows), dtype="<f4")
    return flat.reshape(len(rows), DIM).astype(np.float32)


def _score_cached(
    entry: _Session,
    query: npt.NDArray[np.float32],
    k: int,
    since: int | None,
    until: int | None,
    exclude_ids: set[str] | frozenset[str],
    best: dict[tuple[VectorKind, str], DenseHit],
) -> None:
    import numpy as np

    if entry.matrix is None or entry.times is None:
        return
    scores = entry.matrix @ query
    if since is not None:
        scores = np.where(entry.times >= since, scores, -2.0)
    if until is not None:
        scores = np.where(entry.times < until, scores, -2.0)
    for index in _top(scores, 4 * k, -1.5):
        _keep(best, entry.rows[index], float(scores[index]), exclude_ids)


async def _score_streamed(
    vectors: VectorStore,
    model: str,
    query: npt.NDArray[np.float32],
    session_id: str,
    kind: VectorKind,
    k: int,
    since: int | None,
    until: int | None,
    exclude_ids: set[str] | frozenset[str],
    best: dict[tuple[VectorKind, str], DenseHit],
) -> None:
    floor = -2.0
    after = 0
    while True:
        rows = await vectors.scan(
            session_id, model, kind, after_key=after, limit=CHUNK, since=since, until=until
        )
        if not rows:
            return
        after = rows[-1].key
        scores = _matrix(rows) @ query
        for index in _top(scores, 4 * k, floor):
            _keep(best, rows[index], float(scores[index]), exclude_ids)
        if len(best) > 4 * k:
            floor = _prune(best, k)
        if len(rows) < CHUNK:
            return


def _top(scores: npt.NDArray[np.float32], k: int, floor: float) -> list[int]:
    """Indices of the ``k`` best scores above ``floor`` (extra room: a message may have
    several parts among them, and excluded ones are dropped later)."""
    import numpy as np

    picked = np.argpartition(-scores, k)[:k] if len(scores) > k else np.arange(len(scores))
    return [int(i) for i in picked if scores[i] > floor]


def _keep(
    best: dict[tuple[VectorKind, str], DenseHit],
    row: StoredVector,
    score: float,
    exclude_ids: set[str] | frozenset[str],
) -> None:
    if row.kind == "message" and row.id in exclude_ids:
        return
    key = (row.kind, row.id)
    found = best.get(key)
    if found is None or score > found.score:
        best[key] = DenseHit(row.kind, row.id, row.session_id, score, row.part_id)


def _prune(best: dict[tuple[VectorKind, str], DenseHit], k: int) -> float:
    """Drop all but the best ``k``; return the score a newcomer must beat."""
    kept = sorted(best.values(), key=lambda h: -h.score)[:k]
    best.clear()
    best.update({(h.kind, h.id): h for h in kept})
    return kept[-1].score if len(kept) >= k else -2.0
