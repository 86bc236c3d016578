"""Incremental indexing: embed the texts of a session that have no vector yet.

Nothing is embedded on the append path. ``grep`` (with ``RetrievalConfig.semantic``)
first catches up for the sessions it searches, for at most
``semantic_index_seconds``, and :meth:`~mnesis.retrieval.RetrievalEngine.index_semantic`
runs a full pass (after an import, or as a background task of the caller's). Texts
are read in batches (a reply to a question is embedded with its question, see
:func:`embedded_text`), embedded in a worker thread (CPU work never runs on the event
loop) and written in one transaction per batch; an interrupted pass loses nothing
already written.

A call reads only what is new. The process remembers, per store, session, model and
kind, a range of row keys ``(low, high]`` in which every text has a vector (row keys
grow in commit order within a session, see
:meth:`~mnesis.store.vectors.VectorStore.pending`). A call first reads the rows above
``high`` (the new ones: a lookup of the highest key when there are none), then, with
the time left, walks the history below ``low`` in ranges of ``SPAN`` keys, newest
first, until ``low`` is 0. The first call of a process for a session starts with an
empty range at the highest key: its new texts never wait behind that walk, and a
time budget bounds each call (a statement reads at most ``SPAN`` keys).
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
SPAN = 16_384
"""Row keys read per statement while walking the history below ``low``."""
_Mark = tuple[str, str, str, VectorKind]
"""``(store location, session, model, kind)``."""
_marks: dict[_Mark, tuple[int, int]] = {}
"""The key range ``(low, high]`` in which every text has a vector from that model."""


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
    mark: _Mark,
    deadline: float | None,
    report: IndexReport,
) -> bool:
    """Embed the session's texts of ``kind`` outside the done range, the new ones
    first; False when out of time."""
    last = await vectors.last_key(session_id, kind)
    low, high = _marks.get(mark, (last, last))
    if high > last:  # not the database the range was taken on (a file put back)
        low, high = last, last
    while high < last:
        if _late(deadline):
            return False
        high = await _index_range(vectors, embedder, session_id, kind, high, last, report)
        low, high = _save(mark, low, high)
    while low > 0:
        start = max(0, low - SPAN)
        after = start
        while after < low:
            if _late(deadline):
                return False
            after = await _index_range(vectors, embedder, session_id, kind, after, low, report)
        low, high = _save(mark, start, high)
    return True


async def _index_range(
    vectors: VectorStore,
    embedder: Embedder,
    session_id: str,
    kind: VectorKind,
    after: int,
    up_to: int,
    report: IndexReport,
) -> int:
    """Embed one batch of the texts in ``(after, up_to]`` that have no vector; return
    the key up to which that range is now done."""
    batch = await vectors.pending(
        session_id, embedder.model_id, kind, _READ, after_key=after, up_to_key=up_to
    )
    if batch:
        await vectors.put(embedder.model_id, await _embed(embedder, batch))
        report.embedded += len(batch)
    # Every row up to ``up_to`` was committed before ``pending`` read (it is at most
    # the highest key read earlier), so a short batch leaves none of them out.
    return batch[-1].key if len(batch) == _READ else up_to


def _late(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


def _save(mark: _Mark, low: int, high: int) -> tuple[int, int]:
    """Store a done range, joined with the one stored (by a concurrent call) when the
    two overlap or touch; otherwise this one replaces it."""
    saved = _marks.get(mark)
    if saved is not None and saved[0] <= high and low <= saved[1]:
        low, high = min(low, saved[0]), max(high, saved[1])
    _marks[mark] = (low, high)
    return low, high


def embedded_text(text: PendingText) -> str:
    """What is embedded for a text: the text itself, followed by the previous turn
    when that turn asked a question (an answer seldom repeats its question's words)."""
    lines = (text.context or "").split("\n")
    previous = lines[1].split(": ", 1)[-1] if len(lines) > 1 else ""
    return f"{text.text}\n{previous}" if "?" in previous else text.text


async def _embed(embedder: Embedder, batch: list[PendingText]) -> list[tuple[PendingText, bytes]]:
    matrix = await asyncio.to_thread(embedder.embed, [embedded_text(t) for t in batch])
    return list(zip(batch, codec.encode(matrix), strict=True))
