"""Regex search: scan stored texts newest first, within a wall-clock budget.

The paging state is, per pool (``"messages"`` / ``"summaries"``), the key of the
last text scanned (``<pool>_before``) and whether the pool is exhausted
(``<pool>_done``). A scan that runs out of time returns what it found so far with
a state to resume from.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import regex

from mnesis.errors import InvalidArgumentError
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


async def scan_page(
    store: ImmutableStore,
    pattern: Any,
    pools: list[_Pool],
    where: SearchFilter,
    size: int,
    state: dict[str, int],
    timeout_seconds: float,
) -> tuple[list[SearchHit], dict[str, int], bool, bool]:
    """Up to ``size`` matches after ``state``.

    Returns the hits, the next state, whether more may exist and whether the scan
    stopped at ``timeout_seconds``.
    """
    deadline = time.monotonic() + timeout_seconds
    out: list[SearchHit] = []
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
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = more = True
                break
            page = await store.scan_text(
                scope=pool, where=where, before_key=before, limit=_SCAN_PAGE
            )
            if not page:
                new_state[done_name] = 1
                break
            for hit in page:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = more = True
                    break
                try:
                    found = pattern.search(original_text(hit.text), timeout=remaining)
                except TimeoutError:
                    timed_out = more = True
                    break
                before = hit.key
                if found is None or (hit.kind, hit.id) in seen:
                    continue
                seen.add((hit.kind, hit.id))
                out.append(hit)
                if len(out) >= size:
                    more = True
                    break
            if timed_out:
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
