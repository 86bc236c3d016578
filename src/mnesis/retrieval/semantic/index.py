"""Incremental indexing: embed the texts of a session that have no vector yet.

Nothing is embedded on the append path. ``grep`` (with ``RetrievalConfig.semantic``)
first catches up for the sessions it searches, for at most
``semantic_index_seconds``, and :meth:`~mnesis.retrieval.RetrievalEngine.index_semantic`
runs a full pass (after an import, or as a background task of the caller's). Texts
are read in batches (a reply to a question is embedded with its question, see
:func:`embedded_text`), embedded in a worker thread (CPU work never runs on the event
loop) and written in one transaction per batch; an interrupted pass loses nothing
already written. A session whose message count has not changed since its last
complete pass is skipped without a query.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from mnesis.retrieval.semantic.model import Embedder
from mnesis.store.immutable import ImmutableStore
from mnesis.store.vectors import PendingText, VectorKind, VectorStore

__all__ = ["IndexReport", "embedded_text", "index_pending"]

_READ = 128
"""Texts read (and embedded in one worker-thread call) per batch."""
_KINDS: tuple[VectorKind, ...] = ("message", "summary")
_complete: dict[tuple[str, str, str], int] = {}
"""``(store location, session, model)`` → message count at the last complete pass."""


class IndexReport:
    """What one indexing call did."""

    def __init__(self) -> None:
        self.embedded = 0
        """Texts embedded and stored."""
        self.complete = True
        """False when the time budget ran out with texts still waiting."""
        self.seconds = 0.0


async def index_pending(
    store: ImmutableStore,
    vectors: VectorStore,
    embedder: Embedder,
    session_ids: Sequence[str],
    *,
    budget_seconds: float | None = None,
) -> IndexReport:
    """Embed what the sessions hold without a vector, until done or out of budget."""
    report = IndexReport()
    started = time.perf_counter()
    deadline = None if budget_seconds is None else started + budget_seconds
    for session_id in session_ids:
        key = (store.location, session_id, embedder.model_id)
        count = await store.count_messages(session_id)
        if _complete.get(key) == count:
            continue
        done = await _index_session(vectors, embedder, session_id, deadline, report)
        if done:
            _complete[key] = count
        else:
            report.complete = False
            break
    report.seconds = time.perf_counter() - started
    return report


async def _index_session(
    vectors: VectorStore,
    embedder: Embedder,
    session_id: str,
    deadline: float | None,
    report: IndexReport,
) -> bool:
    for kind in _KINDS:
        while True:
            if deadline is not None and time.perf_counter() >= deadline:
                return False
            batch = await vectors.pending(session_id, embedder.model_id, kind, _READ)
            if not batch:
                break
            await vectors.put(embedder.model_id, await _embed(embedder, batch))
            report.embedded += len(batch)
            if len(batch) < _READ:
                break
    return True


def embedded_text(text: PendingText) -> str:
    """What is embedded for a text: the text itself, followed by the previous turn
    when that turn asked a question (an answer seldom repeats its question's words)."""
    lines = (text.context or "").split("\n")
    previous = lines[1].split(": ", 1)[-1] if len(lines) > 1 else ""
    return f"{text.text}\n{previous}" if "?" in previous else text.text


async def _embed(embedder: Embedder, batch: list[PendingText]) -> list[tuple[PendingText, bytes]]:
    matrix = await asyncio.to_thread(embedder.embed, [embedded_text(t) for t in batch])
    return [(text, row.astype("<f4").tobytes()) for text, row in zip(batch, matrix, strict=True)]
