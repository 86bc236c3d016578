"""The background compaction's scheduler never swallows its caller's cancellation."""

from __future__ import annotations

import asyncio

import pytest

from mnesis.compaction.scheduler import CompactionScheduler
from mnesis.models.message import CompactionResult
from tests.cancelling import cancel_while_stopping, stop_slowly


async def test_a_caller_cancelled_in_wait_gets_its_cancellation_and_the_run_goes_on() -> None:
    scheduler = CompactionScheduler()
    release, entered = asyncio.Event(), asyncio.Event()

    async def run() -> CompactionResult:
        await release.wait()
        return CompactionResult(session_id="s")

    async def waiter() -> None:
        entered.set()
        await scheduler.wait()

    scheduler.start(run, 10)
    caller = asyncio.create_task(waiter())
    await entered.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert scheduler.in_progress
    release.set()
    await scheduler.wait()
    assert not scheduler.in_progress


async def test_wait_absorbs_the_cancellation_of_the_run() -> None:
    scheduler = CompactionScheduler()
    started = asyncio.Event()

    async def run() -> CompactionResult:
        started.set()
        await asyncio.Event().wait()
        return CompactionResult(session_id="s")

    scheduler.start(run, 10)
    await started.wait()
    waiting = asyncio.create_task(scheduler.wait())
    await scheduler.cancel()
    await waiting
    assert not scheduler.in_progress


async def test_a_caller_cancelled_in_cancel_gets_its_cancellation_once_the_run_stopped() -> None:
    scheduler = CompactionScheduler()
    started, stopping, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def run() -> CompactionResult:
        started.set()
        await stop_slowly(stopping, release)
        return CompactionResult(session_id="s")

    scheduler.start(run, 10)
    await started.wait()
    await cancel_while_stopping(scheduler.cancel(), stopping, release)
    assert not scheduler.in_progress
