"""``run_bounded``: a cancellation that meets the read's result is never lost.

Python 3.11's ``asyncio.wait_for`` returned a result that reached the waiting task in
the same loop step as a cancellation, and dropped the cancellation. Each ``steps``
cancels at another point of the result's way from the thread to the task.
"""

from __future__ import annotations

import asyncio

import pytest

from mnesis.files.access import run_bounded
from tests.cancelling import Gate, outcome_after_cancel


@pytest.mark.parametrize("steps", range(6))
async def test_a_cancellation_that_meets_the_result_still_cancels(steps: int) -> None:
    gate = Gate()

    def read() -> str:
        gate.hold()
        return "data"

    task = asyncio.create_task(run_bounded(read, 60.0, "f.txt"))
    await gate.arrived.wait()
    gate.open_and_join()
    assert await outcome_after_cancel(steps, task) in (asyncio.CancelledError, "data")
