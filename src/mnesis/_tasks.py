"""Waiting for a task without losing the caller's own cancellation.

``contextlib.suppress(asyncio.CancelledError)`` around ``await task`` cannot tell the
cancellation of ``task`` (absorbed on purpose) from a cancellation of the caller (which
must propagate). ``asyncio.wait`` can: it never raises what the task raised, and raises
``CancelledError`` only when the caller itself is cancelled.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

__all__ = ["cancel_and_wait", "wait_out"]

T = TypeVar("T")


async def _until_done(task: asyncio.Future[Any]) -> None:
    """Wait until ``task`` is done, then raise the caller's cancellation met meanwhile."""
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # read here: the cancelled caller never will
        raise cancelled


async def wait_out(task: asyncio.Future[T]) -> T:
    """Await ``task`` to its end, which a cancellation of the caller does not cut short.

    Returns what ``task`` returns and raises what it raises. A caller cancelled meanwhile
    keeps waiting, then raises ``CancelledError``: it never goes on while ``task`` runs.
    """
    await _until_done(task)
    return task.result()


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and return once it has finished.

    The cancellation of ``task`` is absorbed; an exception it ended with is raised. A
    cancellation of the caller that arrives meanwhile is raised once ``task`` has finished.
    """
    task.cancel()
    await _until_done(task)
    if not task.cancelled():
        task.result()
