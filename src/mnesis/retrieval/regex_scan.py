"""Regex search: scan stored texts newest first, within a wall-clock budget, off the loop.

Matching runs in a worker thread that releases the GIL inside the engine
(``concurrent=True``), so a catastrophic pattern never holds the event loop: a
thread holding the GIL in C code does not give it up at the switch interval, and
the loop would wait for the whole engine call (issue 34: gaps up to 0.5 s). The
``regex`` package releases it by default only for some inputs; asking for it makes
that a guarantee (the texts are immutable ``str``, as ``concurrent`` requires).
Every window of text is matched with the time left as its own timeout (converted
to the CPU time the engine counts), and the loop stops waiting at the wall-clock
bound whatever the thread does, so the scan returns on time and an abandoned
thread ends about then too.

The paging state is, per pool (``"messages"`` / ``"summaries"``), the key of the
last text scanned (``<pool>_before``) and whether the pool is exhausted
(``<pool>_done``). A scan that runs out of time returns what it found so far with
a state to resume from.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

from mnesis.retrieval.hygiene import is_retrieval_trace
from mnesis.retrieval.ranking import SearchPool
from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.immutable import ImmutableStore
from mnesis.store.search_text import original_text

__all__ = ["scan_page"]

_SCAN_PAGE = 500
WINDOW_CHARS = 100_000
"""A longer text is matched in windows of this many characters (``pos``/``endpos``):
the engine's memory grows with the span it matches (it keeps every capture of a
repeated group: ~115 bytes per character for ``(.)*z``)."""
OVERLAP_CHARS = 10_000
"""How much consecutive windows share. A match that starts in a window's last
``OVERLAP_CHARS`` is left to the next window, so only a match (with what its
lookarounds read) longer than this can differ from matching the whole text."""
_PROBE_CPU_SECONDS = 0.05
_MIN_CPU_SECONDS = 0.005


class _Progress:
    """What a matching thread has done so far; the event loop may stop it at any time."""

    def __init__(self) -> None:
        self.found: list[tuple[int, int, str]] = []
        """``(index, start, matched text)`` of the texts that matched."""
        self.scanned = 0
        """How many texts were fully scanned."""
        self.stop = threading.Event()

    def snapshot(self) -> tuple[list[tuple[int, int, str]], int]:
        scanned = self.scanned
        return [f for f in self.found if f[0] < scanned], scanned


def _match_page(
    pattern: Any, texts: list[str | None], deadline: float, wanted: int, progress: _Progress
) -> bool:
    """Match ``texts`` in order (in a worker thread); ``None`` texts are skipped.

    Records matches and the scanned count in ``progress``; returns whether the
    deadline (or the loop abandoning the scan) stopped it.
    """
    for index, text in enumerate(texts):
        if text is not None:
            try:
                match = _search(pattern, original_text(text), deadline, progress.stop)
            except (TimeoutError, MemoryError):
                return True
            if match is not None:
                progress.found.append((index, match.start(), match.group(0)[:80]))
        progress.scanned = index + 1
        if len(progress.found) >= wanted:
            return False
    return False


def _search(pattern: Any, text: str, deadline: float, stop: threading.Event) -> Any:
    """The first match of ``pattern`` in ``text``, window by window (see
    ``WINDOW_CHARS``); ``TimeoutError`` at the ``deadline`` or once ``stop`` is set."""
    start = 0
    while True:
        end = min(start + WINDOW_CHARS, len(text))
        match = _search_window(pattern, text, start, end, deadline, stop)
        if end == len(text) or (match is not None and match.start() < end - OVERLAP_CHARS):
            return match
        start = end - OVERLAP_CHARS


def _search_window(
    pattern: Any, text: str, start: int, end: int, deadline: float, stop: threading.Event
) -> Any:
    """``pattern.search`` over ``text[start:end]``, ending by the wall-clock ``deadline``.

    The engine's ``timeout`` counts the process's CPU time, which runs slower than
    the wall clock on a busy machine (a 0.5 s timeout took 1.2 s with one other
    process on the core). So the first attempt is short (``_PROBE_CPU_SECONDS``:
    nearly every window is done by then) and measures that rate; the next converts
    the wall time left into CPU time at the rate measured, and so on until a match,
    the deadline or ``stop``.
    """
    budget: float | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or stop.is_set():
            raise TimeoutError("regex scan reached its bound")
        if budget is None:
            budget = min(_PROBE_CPU_SECONDS, remaining)
        wall, cpu = time.monotonic(), time.process_time()
        try:
            return pattern.search(text, start, end, concurrent=True, timeout=budget)
        except TimeoutError:
            rate = (time.process_time() - cpu) / max(time.monotonic() - wall, 1e-6)
            budget = max(rate * (deadline - time.monotonic()), _MIN_CPU_SECONDS)


async def _match_within(
    pattern: Any, texts: list[str | None], deadline: float, wanted: int
) -> tuple[list[tuple[int, int, str]], int, bool]:
    """``_match_page`` in its own thread, abandoned at the ``deadline``.

    The loop stops waiting at the wall-clock deadline and keeps what was fully
    scanned; the thread (a daemon) sees ``stop`` between windows and its engine
    timeout ends at about the same deadline (see ``_search_window``); its late
    results are dropped.
    """
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    progress = _Progress()
    outcome: list[bool] = []

    def run() -> None:
        try:
            outcome.append(_match_page(pattern, texts, deadline, wanted, progress))
        finally:
            with contextlib.suppress(RuntimeError):  # the loop may be closed by now
                loop.call_soon_threadsafe(finished.set)

    threading.Thread(target=run, name="mnesis-regex", daemon=True).start()
    # Not asyncio.wait_for: on Python 3.11 it returns when the thread finishes as the
    # caller is cancelled, and the cancellation is lost.
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
            await finished.wait()
    if not outcome:
        progress.stop.set()
    found, scanned = progress.snapshot()
    return found, scanned, outcome[0] if outcome else True


async def scan_page(
    store: ImmutableStore,
    pattern: Any,
    pools: list[SearchPool],
    where: SearchFilter,
    size: int,
    state: dict[str, int],
    deadline: float,
    *,
    exclude_ids: set[str] | None = None,
    include_traces: bool = False,
) -> tuple[list[tuple[SearchHit, int, str]], dict[str, int], bool, bool]:
    """Up to ``size`` ``(hit, match start, matched text)`` triples after ``state``.

    Returns the hits, the next state, whether more may exist and whether the scan
    stopped at the ``deadline`` (a ``time.monotonic()`` value).
    """
    skip = exclude_ids or set()
    out: list[tuple[SearchHit, int, str]] = []
    seen: set[tuple[str, str]] = set()
    new_state = dict(state)
    timed_out = False
    more = False
    for pool in pools:
        key_name = f"{pool}_before"
        done_name = f"{pool}_done"
        if new_state.get(done_name):
            continue
        before = new_state.get(key_name)
        while len(out) < size:
            if deadline - time.monotonic() <= 0:
                timed_out = more = True
                break
            page = await store.scan_text(
                scope=pool, where=where, before_key=before, limit=_SCAN_PAGE
            )
            if not page:
                new_state[done_name] = 1
                break
            texts: list[str | None] = [
                h.text
                if (include_traces or not is_retrieval_trace(h))
                and not (h.kind == "message" and h.id in skip)
                else None
                for h in page
            ]
            found, scanned, timed_out = await _match_within(
                pattern, texts, deadline, size - len(out)
            )
            for index, start, matched in found:
                hit = page[index]
                if (hit.kind, hit.id) in seen:
                    continue
                seen.add((hit.kind, hit.id))
                out.append((hit, start, matched))
            if scanned:
                before = page[scanned - 1].key
            if timed_out:
                more = True
                break
            if len(out) >= size:
                more = True
                break
            if len(page) < _SCAN_PAGE and before == page[-1].key:
                new_state[done_name] = 1
                break
        if before is not None:
            new_state[key_name] = before
        if timed_out or len(out) >= size:
            more = more or not new_state.get(done_name)
            break
    return out, new_state, more, timed_out
