"""Dense search: brute-force cosine over the stored vectors of the searched sessions.

Vectors are unit length, so cosine is a dot product. They are read in chunks of
``CHUNK`` rows (about 6 MB each), scored with numpy and only the best ``k`` are kept,
so memory stays bounded whatever the session's length. A message scores as its best
text part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnesis.retrieval.semantic.model import DIM
from mnesis.store.vectors import StoredVector, VectorKind, VectorStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["CHUNK", "DenseHit", "dense_search"]

CHUNK = 4096


@dataclass(frozen=True, slots=True)
class DenseHit:
    """A message or summary close to the query (``score``: cosine similarity)."""

    kind: VectorKind
    id: str
    session_id: str
    score: float
    part_id: str | None


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
) -> list[DenseHit]:
    """The ``k`` messages/summaries of ``session_ids`` closest to ``query``, best first."""
    import numpy as np

    best: dict[tuple[VectorKind, str], DenseHit] = {}
    floor = -2.0
    for session_id in session_ids:
        for kind in kinds:
            after = 0
            while True:
                rows = await vectors.scan(
                    session_id, model, kind, after_key=after, limit=CHUNK, since=since, until=until
                )
                if not rows:
                    break
                after = rows[-1].key
                matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype="<f4")
                scores = matrix.reshape(len(rows), DIM) @ query
                for index in _top(scores, k, floor):
                    _keep(best, rows[index], float(scores[index]), exclude_ids)
                if len(best) > 4 * k:
                    floor = _prune(best, k)
                if len(rows) < CHUNK:
                    break
    ranked = sorted(best.values(), key=lambda h: -h.score)
    return ranked[:k]


def _top(scores: npt.NDArray[np.float32], k: int, floor: float) -> list[int]:
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
