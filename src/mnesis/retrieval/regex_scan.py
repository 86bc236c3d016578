"""Regex search: scan stored texts newest first, within a wall-clock budget, off the loop.

Matching runs in a worker thread with the GIL released (``regex``'s ``concurrent``
mode), so a catastrophic pattern never stalls the event loop; every text is matched
with the time left as its own timeout, so the scan stops at the bound.

The paging state is, per pool (``"messages"`` / ``"summaries"``), the key of the
last text scanned (``<pool>_before``) and whether the pool is exhausted
(``<pool>_done``). A scan that runs out of time returns what it found so far with
a state to resume from.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

import regex

from mnesis.errors import InvalidArgumentError
from mnesis.retrieval.hygiene import is_retrieval_trace
from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.immutable import ImmutableStore
from mnesis.store.search_text import original_text

__all__ = ["compile_pattern", "scan_page"]

_SCAN_PAGE = 500
_Pool = Literal["messages", "summaries"]


def compile_pattern(pattern: str) -> Any:
    """Compile a user's regular expression; ``InvalidArgumentError`` if it is not one."""
    try:
        return regex.compile(pattern, regex.MULTILINE)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise InvalidArgumentError(f"invalid regular expression {pattern[:80]!r}: {exc}") from None


def _match_page(
    pattern: Any, texts: list[str | None], deadline: float, wanted: int
) -> tuple[list[tuple[int, int, str]], int, bool]:
    """Match ``texts`` in order (in a worker thread); ``None`` texts are skipped.

    Returns ``(index, start, matched text)`` triples, how many texts were fully
    scanned and whether the deadline stopped the scan.
    """
    found: list[tuple[int, int, str]] = []
    for index, text in enumerate(texts):
        if text is None:
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return found, index, True
        try:
            match = pattern.search(original_text(text), timeout=remaining, concurrent=True)
        except TimeoutError:
            return found, index, True
        if match is not None:
            found.append((index, match.start(), match.group(0)[:80]))
            if len(found) >= wanted:
                return found, index + 1, False
    return found, len(texts), False


async def scan_page(
    store: ImmutableStore,
    pattern: Any,
    pools: list[_Pool],
    where: SearchFilter,
    size: int,
    state: dict[str, int],
    timeout_seconds: float,
    *,
    exclude_ids: set[str] | None = None,
    include_traces: bool = False,
) -> tuple[list[tuple[SearchHit, int, str]], dict[str, int], bool, bool]:
    """Up to ``size`` ``(hit, match start, matched text)`` triples after ``state``.

    Returns the hits, the next state, whether more may exist and whether the scan
    stopped at ``timeout_seconds``.
    """
    deadline = time.monotonic() + timeout_seconds
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
            found, scanned, timed_out = await asyncio.to_thread(
                _match_page, pattern, texts, deadline, size - len(out)
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
