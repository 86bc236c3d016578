"""In-process publish/subscribe for session, compaction and operator events.

Handlers are called with ``(event, payload)``. Sync handlers run inline in
registration order; async handlers are scheduled as tasks on the running loop
(skipped, with a debug log, when no loop runs). A failing handler is logged and
never breaks the publisher.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

__all__ = ["EventBus", "EventHandler", "Handler", "MnesisEvent"]

_LOGGER = logging.getLogger("mnesis.events")


class MnesisEvent(StrEnum):
    """Every event mnesis publishes."""

    SESSION_CREATED = "session.created"
    SESSION_UPDATED = "session.updated"
    """Declared for 0.4.0's code; never published (sessions are not updated)."""
    SESSION_CLOSED = "session.closed"
    SESSION_DELETED = "session.deleted"
    """Declared for 0.4.0's code; never published (sessions are never deleted)."""
    MESSAGE_CREATED = "message.created"
    MESSAGE_UPDATED = "message.updated"
    """Declared for 0.4.0's code; never published (messages are append-only)."""
    PART_CREATED = "part.created"
    """Declared for 0.4.0's code; never published (parts arrive with ``message.created``)."""
    PART_UPDATED = "part.updated"
    """Declared for 0.4.0's code; never published."""
    COMPACTION_TRIGGERED = "compaction.triggered"
    COMPACTION_COMPLETED = "compaction.completed"
    COMPACTION_FAILED = "compaction.failed"
    PRUNE_COMPLETED = "prune.completed"
    LLM_RETRY = "llm.retry"
    DOOM_LOOP_DETECTED = "doom_loop.detected"
    MAP_STARTED = "map.started"
    MAP_ITEM_COMPLETED = "map.item_completed"
    MAP_COMPLETED = "map.completed"


EventHandler = Callable[[MnesisEvent, dict[str, Any]], Awaitable[None] | None]

Handler = EventHandler
"""0.4.0's name of :data:`EventHandler`."""


class EventBus:
    """A small synchronous/asynchronous event bus."""

    def __init__(self, logger: Any = None) -> None:
        """``logger`` (a ``logging.Logger`` or a structlog logger) receives the failures
        of handlers; default: the ``mnesis.events`` logger."""
        self._handlers: dict[MnesisEvent | None, list[EventHandler]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._logger: Any = logger if logger is not None else _LOGGER

    def subscribe(self, event: MnesisEvent | None, handler: EventHandler) -> None:
        """Call ``handler`` for ``event`` (``None``: for every event)."""
        if not callable(handler):
            from mnesis.errors import InvalidArgumentError

            raise InvalidArgumentError(f"handler must be callable, got {type(handler).__name__}")
        self._handlers.setdefault(event, []).append(handler)

    def subscribe_all(self, handler: EventHandler) -> None:
        """Call ``handler`` for every event (same as ``subscribe(None, handler)``)."""
        self.subscribe(None, handler)

    def unsubscribe_all(self, handler: EventHandler) -> None:
        """Remove a handler added with :meth:`subscribe_all`; unknown handlers are ignored."""
        self.unsubscribe(None, handler)

    def unsubscribe(self, event: MnesisEvent | None, handler: EventHandler) -> None:
        """Remove a handler; unknown handlers are ignored."""
        handlers = self._handlers.get(event, [])
        if handler in handlers:
            handlers.remove(handler)

    def publish(self, event: MnesisEvent, payload: dict[str, Any] | None = None) -> None:
        """Deliver ``event`` to its handlers. Never raises."""
        data = payload if payload is not None else {}
        for handler in (*self._handlers.get(event, ()), *self._handlers.get(None, ())):
            try:
                result = handler(event, data)
            except Exception:
                self._logger.exception("event handler %r failed for %s", handler, event.value)
                continue
            if inspect.isawaitable(result):
                self._schedule(event, handler, result)

    def _schedule(self, event: MnesisEvent, handler: EventHandler, awaitable: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._logger.debug("no running loop; async handler %r skipped", handler)
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            return

        async def _run() -> None:
            try:
                await awaitable
            except Exception:
                self._logger.exception("async event handler %r failed for %s", handler, event.value)

        task = loop.create_task(_run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for scheduled async handlers to finish (handlers may schedule more)."""
        while True:
            # A finished task leaves the set in a done-callback the loop has not run yet;
            # awaiting only finished tasks would never yield to it.
            self._tasks.difference_update([t for t in self._tasks if t.done()])
            if not self._tasks:
                return
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
