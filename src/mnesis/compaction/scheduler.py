"""Background compaction: one task at a time, and when a new one may start."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from mnesis._tasks import cancel_and_wait
from mnesis.models.message import CompactionResult

__all__ = ["CompactionScheduler"]


class CompactionScheduler:
    """Holds the background compaction task and the rules against repeating one.

    A trigger is refused while a task runs, while the context has not grown
    since a run that found nothing to do, and within ``min_gap_seconds`` of the
    end of the last run (background or not).
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._task: asyncio.Task[CompactionResult] | None = None
        self._noop_at_tokens: int | None = None
        self._last_finished: float | None = None

    @property
    def in_progress(self) -> bool:
        """True while a background task runs."""
        task = self._task
        return task is not None and not task.done()

    def may_start(self, size: int, min_gap_seconds: float) -> bool:
        """True if a background run may start for a context of ``size`` tokens now."""
        if self.in_progress:
            return False
        if self._noop_at_tokens is not None and size <= self._noop_at_tokens:
            return False
        finished = self._last_finished
        return not (
            min_gap_seconds and finished is not None and self._clock() - finished < min_gap_seconds
        )

    def start(self, run: Callable[[], Awaitable[CompactionResult]], size: int) -> None:
        """Run ``run`` as the background task (needs a running event loop)."""
        self._task = asyncio.get_running_loop().create_task(self._background(run, size))

    async def _background(
        self, run: Callable[[], Awaitable[CompactionResult]], size: int
    ) -> CompactionResult:
        result = await run()
        self._noop_at_tokens = size if result.level_used == 0 else None
        return result

    def finished(self) -> None:
        """Note the end of a run (any run), for the minimum gap."""
        self._last_finished = self._clock()

    async def wait(self) -> None:
        """Wait for the background task (if any) to finish.

        A cancellation of the caller propagates and leaves the task running.
        """
        task = self._task
        if task is not None:
            # Raises CancelledError only for the caller's cancellation, not the task's.
            await asyncio.wait({task})
            if not task.cancelled():
                task.result()
            self._task = None

    async def cancel(self) -> None:
        """Cancel the background task (if any) and wait until it has stopped."""
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(Exception):
                await cancel_and_wait(task)
        self._task = None
