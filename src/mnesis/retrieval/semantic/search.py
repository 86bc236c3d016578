"""Dense search: brute-force cosine over the stored vectors of the searched sessions.

Vectors are unit length, so cosine is a dot product; a message scores as its best
text part. Vectors are held as int8 with a scale each (:mod:`codec`, ~400 bytes a
vector with its IDs and time), so a 1M-message session fits the cache and is scored
in one numpy pass, in a worker thread once it is large. Memory is bounded two ways:

* a session's vectors are kept in a per-process cache (``CACHE_BYTES`` in all, least
  recently used out first) and refreshed incrementally: a lookup of the newest
  vector key, then only the rows above the cached one. Vector keys grow in commit
  order within a session (every write of vectors locks its session), so nothing is
  missed; a newest key below the cached one (a purge) rebuilds the entry;
* a session whose vectors do not fit the cache is streamed in chunks of ``CHUNK``
  rows and only the best ``k`` are kept after each chunk.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnesis.retrieval.semantic import codec
from mnesis.retrieval.semantic.model import DIM
from mnesis.store.vectors import StoredVector, VectorKind, VectorStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["CACHE_BYTES", "CHUNK", "DenseHit", "dense_search"]

CHUNK = 4096
CACHE_BYTES = 512 * 2**20
"""Vectors kept in memory per process, all sessions together (about 1.2M vectors with
their IDs, so a 1M-message session is searched in memory)."""
ROW_BYTES = DIM + 4 + 8 + 2 * 32
"""Memory a cached vector takes: int8 values, scale, time, message and part IDs."""
INLINE_ROWS = 8192
"""Up to this many rows are scored on the event loop; more in a worker thread."""

_CacheKey = tuple[str, str, str, str]
"""``(store location, session, kind, model)``."""


@dataclass(frozen=True, slots=True)
class DenseHit:
    """A message or summary close to the query (``score``: cosine similarity)."""

    kind: VectorKind
    id: str
    session_id: str
    score: float
    part_id: str | None


class _Rows:
    """Decoded vectors of one session, kind and model, in key order, in arrays that
    grow in place (by an eighth) as rows are appended."""

    def __init__(self, kind: VectorKind, session_id: str) -> None:
        import numpy as np

        self.kind: VectorKind = kind
        self.session_id = session_id
        self.count = 0
        self.last_key = 0
        self.values = np.zeros((0, DIM), dtype=np.int8)
        self.scales = np.zeros(0, dtype=np.float32)
        self.times = np.zeros(0, dtype=np.int64)
        self.ids = np.zeros(0, dtype="S1")
        self.part_ids = np.zeros(0, dtype="S1")

    @property
    def nbytes(self) -> int:
        """Memory held, spare room included."""
        arrays = (self.values, self.scales, self.times, self.ids, self.part_ids)
        return sum(a.nbytes for a in arrays)

    def append(self, rows: Sequence[StoredVector]) -> None:
        """Add the rows above ``last_key`` (another search may have added some)."""
        import numpy as np

        rows = [r for r in rows if r.key > self.last_key]
        if not rows:
            return
        values, scales = codec.decode([r.vector for r in rows])
        ids = np.array([r.id.encode() for r in rows])
        part_ids = np.array([(r.part_id or "").encode() for r in rows])
        start, end = self.count, self.count + len(rows)
        if end > len(self.scales):
            self.reserve(max(end, len(self.scales) + len(self.scales) // 8))
        self.ids = _widened(self.ids, ids.dtype)
        self.part_ids = _widened(self.part_ids, part_ids.dtype)
        self.values[start:end] = values
        self.scales[start:end] = scales
        self.times[start:end] = [r.created_at for r in rows]
        self.ids[start:end] = ids
        self.part_ids[start:end] = part_ids
        self.count, self.last_key = end, rows[-1].key

    def reserve(self, room: int) -> None:
        """Room for ``room`` rows (copies what is held into larger arrays)."""
        import numpy as np

        for name in ("values", "scales", "times", "ids", "part_ids"):
            held = getattr(self, name)
            if len(held) < room:
                grown = np.zeros((room, *held.shape[1:]), dtype=held.dtype)
                grown[: self.count] = held[: self.count]
                setattr(self, name, grown)

    def hit(self, index: int, score: float) -> DenseHit:
        part_id = self.part_ids[index].decode()
        return DenseHit(
            self.kind, self.ids[index].decode(), self.session_id, score, part_id or None
        )


def _widened(held: npt.NDArray[np.bytes_], needed: np.dtype[np.bytes_]) -> npt.NDArray[np.bytes_]:
    """``held``, copied to a wider string type when ``needed`` is wider."""
    return held if needed.itemsize <= held.dtype.itemsize else held.astype(needed)


_cache: OrderedDict[_CacheKey, _Rows] = OrderedDict()
_too_big: set[_CacheKey] = set()
"""Entries that outgrew the cache: streamed from then on."""


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
    search = _Search(query, k, since, until, exclude_ids, best)
    for session_id in session_ids:
        for kind in kinds:
            cached = None
            if location is not None:
                cached = await _cached(vectors, (location, session_id, kind, model))
            if cached is not None:
                await search.score(cached)
            else:
                await _score_streamed(vectors, model, session_id, kind, search)
    return sorted(best.values(), key=lambda h: -h.score)[:k]


async def _cached(vectors: VectorStore, key: _CacheKey) -> _Rows | None:
    """The session's vectors, brought up to date; None when they do not fit the cache."""
    if key in _too_big:
        return None
    _, session_id, kind, model = key
    vector_kind: VectorKind = "message" if kind == "message" else "summary"
    newest = await vectors.last_vector_key(session_id, model, vector_kind)
    entry = _cache.get(key)
    if entry is None or newest < entry.last_key:
        entry = _cache[key] = _Rows(vector_kind, session_id)
        # Sized once for what is stored, so a large session is not copied as it fills.
        total = await vectors.count(session_id, model, vector_kind)
        if total * ROW_BYTES > CACHE_BYTES:
            _give_up(key)
            return None
        entry.reserve(total + CHUNK)
    _cache.move_to_end(key)
    while entry.last_key < newest:
        rows = await vectors.scan(
            session_id, model, vector_kind, after_key=entry.last_key, limit=CHUNK
        )
        entry.append(rows)
        if entry.nbytes > CACHE_BYTES:
            _give_up(key)
            return None
        if len(rows) < CHUNK:
            break
    _evict()
    return entry


def _give_up(key: _CacheKey) -> None:
    """Stream this entry's vectors from now on."""
    _cache.pop(key, None)
    _too_big.add(key)


def _evict() -> None:
    size = sum(e.nbytes for e in _cache.values())
    while size > CACHE_BYTES and len(_cache) > 1:
        _, oldest = _cache.popitem(last=False)
        size -= oldest.nbytes


class _Search:
    """One query's scoring over cached entries and streamed chunks."""

    def __init__(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        since: int | None,
        until: int | None,
        exclude_ids: set[str] | frozenset[str],
        best: dict[tuple[VectorKind, str], DenseHit],
    ) -> None:
        self.query = query.astype("float32")
        self.k = k
        self.since = since
        self.until = until
        self.exclude_ids = exclude_ids
        self.best = best
        self.floor = -2.0

    async def score(self, rows: _Rows) -> None:
        """Keep the best of ``rows`` (the first ``count``)."""
        count = rows.count
        if count == 0:
            return
        arrays = rows.values[:count], rows.scales[:count], rows.times[:count]
        if count > INLINE_ROWS:
            picked = await asyncio.to_thread(self._pick, *arrays)
        else:
            picked = self._pick(*arrays)
        for index, score in picked:
            self._keep(rows.hit(index, score))
        if len(self.best) > 4 * self.k:
            self.floor = _prune(self.best, self.k)

    def _pick(
        self,
        values: npt.NDArray[np.int8],
        scales: npt.NDArray[np.float32],
        times: npt.NDArray[np.int64],
    ) -> list[tuple[int, float]]:
        """The ``4 * k`` best rows above the floor (extra room: a message may have
        several parts among them, and excluded ones are dropped later)."""
        import numpy as np

        scores = codec.scores(values, scales, self.query)
        if self.since is not None:
            scores = np.where(times >= self.since, scores, -2.0)
        if self.until is not None:
            scores = np.where(times < self.until, scores, -2.0)
        top = 4 * self.k
        picked = np.argpartition(-scores, top)[:top] if len(scores) > top else range(len(scores))
        return [(int(i), float(scores[i])) for i in picked if scores[i] > self.floor]

    def _keep(self, hit: DenseHit) -> None:
        if hit.kind == "message" and hit.id in self.exclude_ids:
            return
        key = (hit.kind, hit.id)
        found = self.best.get(key)
        if found is None or hit.score > found.score:
            self.best[key] = hit


async def _score_streamed(
    vectors: VectorStore, model: str, session_id: str, kind: VectorKind, search: _Search
) -> None:
    after = 0
    while True:
        rows = await vectors.scan(
            session_id,
            model,
            kind,
            after_key=after,
            limit=CHUNK,
            since=search.since,
            until=search.until,
        )
        if not rows:
            return
        after = rows[-1].key
        chunk = _Rows(kind, session_id)
        chunk.append(rows)
        await search.score(chunk)
        if len(rows) < CHUNK:
            return


def _prune(best: dict[tuple[VectorKind, str], DenseHit], k: int) -> float:
    """Drop all but the best ``k``; return the score a newcomer must beat."""
    kept = sorted(best.values(), key=lambda h: -h.score)[:k]
    best.clear()
    best.update({(h.kind, h.id): h for h in kept})
    return kept[-1].score if len(kept) >= k else -2.0
