"""``mnesis._tasks``: a task cancelled or waited out, the caller's cancellation kept."""

from __future__ import annotations

import asyncio

import pytest

from mnesis._tasks import cancel_and_wait, wait_out
from tests.cancelling import cancel_while_stopping, stop_slowly


class TestCancelAndWait:
    async def test_absorbs_the_cancellation_of_the_task(self) -> None:
        started, stopping, release = asyncio.Event(), asyncio.Event(), asyncio.Event()
        release.set()

        async def run() -> None:
            started.set()
            await stop_slowly(stopping, release)

        task = asyncio.create_task(run())
        await started.wait()
        await cancel_and_wait(task)
        assert task.cancelled()
        assert stopping.is_set()

    async def test_raises_what_the_task_ended_with(self) -> None:
        started = asyncio.Event()

        async def fails_on_cancel() -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                raise ValueError("cleanup failed") from None

        task = asyncio.create_task(fails_on_cancel())
        await started.wait()  # cancelled before it starts, it would never run
        with pytest.raises(ValueError, match="cleanup failed"):
            await cancel_and_wait(task)

    async def test_a_cancelled_caller_raises_once_the_task_has_stopped(self) -> None:
        stopping, release = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(stop_slowly(stopping, release))
        await cancel_while_stopping(cancel_and_wait(task), stopping, release)
        assert task.cancelled()


class TestWaitOut:
    async def test_returns_the_result(self) -> None:
        async def answer() -> int:
            return 42

        assert await wait_out(asyncio.create_task(answer())) == 42

    async def test_a_cancelled_caller_raises_once_the_task_has_finished(self) -> None:
        started, release = asyncio.Event(), asyncio.Event()

        async def work() -> str:
            started.set()
            await release.wait()
            return "committed"

        task = asyncio.create_task(work())
        await cancel_while_stopping(wait_out(task), started, release)
        assert task.result() == "committed"
