"""An event loop on its own thread, so synchronous framework methods can drive an async
session from anywhere: outside any loop, or inside a running one (where
``asyncio.run`` would fail and blocking on the caller's own loop would deadlock)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from mnesis.errors import InvalidArgumentError

__all__ = ["Portal"]

T = TypeVar("T")


class Portal:
    """A daemon thread running one event loop; every coroutine given runs there."""

    def __init__(self, timeout: float = 300.0) -> None:
        """Start the loop thread; ``timeout`` bounds each synchronous call (seconds)."""
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="mnesis-portal", daemon=True
        )
        self._thread.start()

    def call(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``make()`` on the portal's loop and wait for it (blocking this thread)."""
        if threading.current_thread() is self._thread:
            raise InvalidArgumentError("a synchronous call from the portal's own loop would hang")
        future = asyncio.run_coroutine_threadsafe(make(), self._loop)
        return future.result(self._timeout)

    def acall(self, make: Callable[[], Coroutine[Any, Any, T]]) -> Awaitable[T]:
        """Run ``make()`` on the portal's loop; await the result from any loop."""
        if threading.current_thread() is self._thread:
            return make()
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), self._loop))

    def close(self) -> None:
        """Stop the loop and its thread (idempotent)."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self._timeout)
        self._loop.close()
