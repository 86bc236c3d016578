"""A regex scan's caller cancelled as the matching thread finishes stays cancelled.

Python 3.11's ``asyncio.wait_for`` returned when the thread's end reached the waiting
task in the same loop step as a cancellation, and dropped the cancellation. Each
``steps`` cancels at another point of that way.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import regex

from mnesis.retrieval.regex_scan import _match_within
from tests.cancelling import Gate, outcome_after_cancel

_FOUND = ([(0, 1, "bb")], 1, False)


class _Held:
    """A compiled pattern whose first search waits at ``gate``."""

    def __init__(self, pattern: Any, gate: Gate) -> None:
        self._pattern = pattern
        self._gate = gate

    def search(self, text: str, start: int, end: int, **options: Any) -> Any:
        self._gate.hold()
        return self._pattern.search(text, start, end, **options)


async def test_the_scan_finds_through_the_held_pattern() -> None:
    gate = Gate()
    task = asyncio.create_task(
        _match_within(_Held(regex.compile("b+"), gate), ["abba"], time.monotonic() + 60, 1)
    )
    await gate.arrived.wait()
    gate.open_and_join()
    assert await task == _FOUND


@pytest.mark.parametrize("steps", range(6))
async def test_a_cancellation_that_meets_the_end_of_the_scan_still_cancels(steps: int) -> None:
    gate = Gate()
    task = asyncio.create_task(
        _match_within(_Held(regex.compile("b+"), gate), ["abba"], time.monotonic() + 60, 1)
    )
    await gate.arrived.wait()
    gate.open_and_join()
    assert await outcome_after_cancel(steps, task) in (asyncio.CancelledError, _FOUND)
