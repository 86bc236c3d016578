"""Cancellations at awkward moments, for the tests that a caller's cancellation is kept.

:func:`stop_slowly` and :func:`cancel_while_stopping` cancel a caller while the task it
waits for is still stopping.

A result and a cancellation can also reach a waiting task in the same loop step.

:class:`Gate` holds the worker thread of the code under test; once opened and joined,
that thread's result waits in the event loop's queue. :func:`outcome_after_cancel` then
cancels the waiting task ``steps`` loop callbacks later, so a test can cover each point of
the result's way to the task, deterministically, without sleeping: a cancellation the task
accepted must end it cancelled, whatever arrived with it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

import pytest


class Gate:
    """Holds the worker thread that calls :meth:`hold` until :meth:`open_and_join`."""

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._open = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self) -> None:
        """Called on the worker thread: note it, tell the loop, wait to be opened."""
        self._thread = threading.current_thread()
        self._loop.call_soon_threadsafe(self.arrived.set)
        self._open.wait()

    def open_and_join(self) -> None:
        """Let the thread go and wait (blocking the loop) until it has ended, its result
        handed to the loop."""
        assert self._thread is not None
        self._open.set()
        self._thread.join()


def cancel_after(steps: int, task: asyncio.Task[Any]) -> asyncio.Future[bool]:
    """Cancel ``task`` once ``steps`` more loop callbacks have run (0: now); the future
    tells whether the cancellation was accepted (``task`` was not done yet)."""
    loop = asyncio.get_running_loop()
    accepted: asyncio.Future[bool] = loop.create_future()

    def step(left: int) -> None:
        if left:
            loop.call_soon(step, left - 1)
        else:
            accepted.set_result(task.cancel())

    step(steps)
    return accepted


async def outcome_after_cancel(steps: int, task: asyncio.Task[Any]) -> Any:
    """Cancel ``task`` ``steps`` loop callbacks from now and await it: ``CancelledError``
    if the cancellation was accepted, else what it returned."""
    if await cancel_after(steps, task):
        with pytest.raises(asyncio.CancelledError):
            await task
        return asyncio.CancelledError
    return await task


async def stop_slowly(stopping: asyncio.Event, release: asyncio.Event) -> None:
    """Wait until cancelled, then set ``stopping`` and take until ``release`` to stop."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        stopping.set()
        await release.wait()
        raise


async def cancel_while_stopping(
    call: Coroutine[Any, Any, Any], stopping: asyncio.Event, release: asyncio.Event
) -> None:
    """Run ``call`` in a task, cancel it once ``stopping`` is set, then set ``release``:
    the task must end with ``CancelledError``."""
    caller = asyncio.create_task(call)
    await stopping.wait()
    caller.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
