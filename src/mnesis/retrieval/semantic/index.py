"""Incremental indexing: embed the texts of a session that have no vector yet.

Nothing is embedded on the append path. ``grep`` (with ``RetrievalConfig.semantic``)
first catches up for the sessions it searches, for at most
``semantic_index_seconds``, and :meth:`~mnesis.retrieval.RetrievalEngine.index_semantic`
runs a full pass (after an import, or as a background task of the caller's). Texts
are read in batches (a reply to a question is embedded with its question, see
:func:`embedded_text`), embedded in a worker thread (CPU work never runs on the event
loop) and written in one transaction per batch; an interrupted pass loses nothing
already written.

A call reads only what is new: the process remembers, per store, session, model and
kind, the row key up to which every text has a vector (its mark; row keys grow in
commit order within a session, see :meth:`~mnesis.store.vectors.VectorStore.pending`)
and asks only for the rows above it. The first call of a process for a session starts
from 0 (one pass over the whole history, which also picks up texts an interrupted
process left); later calls cost a lookup of the highest key when nothing is new, and
otherwise a read of the new rows only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from mnesis.retrieval.semantic import codec
from mnesis.retrieval.semantic.model import Embedder
from mnesis.store.immutable import ImmutableStore
from mnesis.store.vectors import PendingText, VectorKind, VectorStore

__all__ = ["IndexReport", "embedded_text", "index_pending"]

_READ = 128
"""Texts read (and embedded in one worker-thread call) per batch."""
_KINDS: tuple[VectorKind, ...] = ("message", "summary")
_marks: dict[tuple[str, str, str, VectorKind], int] = {}
"""``(store location, session, model, kind)`` → the row key up to which every text has
a vector from that model."""


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
        for kind in _KINDS:
            mark = (store.location, session_id, embedder.model_id, kind)
            done = await _index_kind(vectors, embedder, session_id, kind, mark, deadline, report)
            if not done:
                report.complete = False
                report.seconds = time.perf_counter() - started
                return report
    report.seconds = time.perf_counter() - started
    return report


async def _index_kind(
    vectors: VectorStore,
    embedder: Embedder,
    session_id: str,
    kind: VectorKind,
    mark: tuple[str, str, str, VectorKind],
    deadline: float | None,
    report: IndexReport,
) -> bool:
    """Embed the session's texts of ``kind`` above the mark; False when out of time."""
    last = await vectors.last_key(session_id, kind)
    after = _marks.get(mark, 0)
    if after > last:  # not the database the mark was taken on (a file put back)
        after = _marks[mark] = 0
    while after < last:
        if deadline is not None and time.perf_counter() >= deadline:
            return False
        batch = await vectors.pending(session_id, embedder.model_id, kind, _READ, after_key=after)
        if batch:
            await vectors.put(embedder.model_id, await _embed(embedder, batch))
            report.embedded += len(batch)
        top = batch[-1].key if batch else after
        # Every row up to ``last`` was committed before ``pending`` read, so a short
        # batch leaves none of them without a vector.
        after = top if len(batch) == _READ else max(last, top)
        _marks[mark] = max(_marks.get(mark, 0), after)
    return True


def embedded_text(text: PendingText) -> str:
    """What is embedded for a text: the text itself, followed by the previous turn
    when that turn asked a question (an answer seldom repeats its question's words)."""
    lines = (text.context or "").split("\n")
    previous = lines[1].split(": ", 1)[-1] if len(lines) > 1 else ""
    return f"{text.text}\n{previous}" if "?" in previous else text.text


async def _embed(embedder: Embedder, batch: list[PendingText]) -> list[tuple[PendingText, bytes]]:
    matrix = await asyncio.to_thread(embedder.embed, [embedded_text(t) for t in batch])
    return list(zip(batch, codec.encode(matrix), strict=True))
