"""The shared run loop of the map operators: bounded concurrency, tallies and events.

A :class:`MapRun` is one run of one operator. It publishes ``map.started`` when
:meth:`MapRun.start` is called, one ``map.item_completed`` per item it maps (after
the item's result is counted, so ``completed`` in the payload includes it),
``llm.retry`` when an operator reports a retry, and ``map.completed`` from
:meth:`MapRun.finish`. Results read back from a store rather than computed are
counted with :meth:`MapRun.count` and publish no per-item event. What an
*attempt* is differs by operator (a model call, a sub-session), so each
front-end keeps its own attempt loop and reports retries here.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.operators.concurrency import bounded_map

__all__ = ["MapRun", "collect_batch", "ms_since"]

logger = logging.getLogger("mnesis.operators")

T = TypeVar("T")


class _Result(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def success(self) -> bool: ...
    @property
    def attempts(self) -> int: ...


R = TypeVar("R", bound=_Result)
B = TypeVar("B")


def ms_since(started: float) -> int:
    """Whole milliseconds elapsed since the ``time.perf_counter()`` value ``started``."""
    return int((time.perf_counter() - started) * 1000)


async def collect_batch(stream: AsyncGenerator[R, None], run_id: str, batch: Callable[..., B]) -> B:
    """Every result of ``stream`` sorted by ``index``, as ``batch(run_id=, results=,
    completed=, failed=, elapsed_ms=)`` (the stream is closed however this ends)."""
    started = time.perf_counter()
    results: list[R] = []
    async with contextlib.aclosing(stream):
        async for result in stream:
            results.append(result)
    results.sort(key=lambda r: r.index)
    completed = sum(1 for r in results if r.success)
    return batch(
        run_id=run_id,
        results=results,
        completed=completed,
        failed=len(results) - completed,
        elapsed_ms=ms_since(started),
    )


class MapRun:
    """Tallies and events of one run of ``operator`` (``llm_map`` / ``agentic_map``)."""

    def __init__(self, operator: str, run_id: str, bus: EventBus | None) -> None:
        self.operator = operator
        self.run_id = run_id
        self.completed = 0
        self.failed = 0
        self._bus = bus
        self._started = time.perf_counter()

    def start(self, total: int | None, **details: Any) -> None:
        """Publish ``map.started`` with ``total`` and ``details``; restart the clock."""
        self._started = time.perf_counter()
        self.publish(MnesisEvent.MAP_STARTED, {"total": total, **details})
        shown = " ".join(f"{key}={value}" for key, value in details.items())
        logger.info("%s %s started: total=%s %s", self.operator, self.run_id, total, shown)

    def count(self, success: bool) -> None:
        """Count one finished item."""
        if success:
            self.completed += 1
        else:
            self.failed += 1

    def retry(self, index: int, attempt: int, error: str) -> None:
        """Publish ``llm.retry``: item ``index`` starts attempt ``attempt`` after ``error``."""
        self.publish(MnesisEvent.LLM_RETRY, {"index": index, "attempt": attempt, "error": error})

    async def map(
        self,
        source: AsyncIterator[T],
        fn: Callable[[T], Awaitable[R]],
        *,
        concurrency: int,
        total: int | None,
        details: Callable[[R], dict[str, Any]] | None = None,
    ) -> AsyncGenerator[R, None]:
        """Run ``fn`` over ``source`` with at most ``concurrency`` calls at once (see
        :func:`~mnesis.operators.concurrency.bounded_map`); count each result and
        publish its ``map.item_completed`` (plus ``details(result)``) before yielding it."""

        async def one(entry: T) -> R:
            result = await fn(entry)
            self.count(result.success)
            extra = details(result) if details is not None else {}
            self.publish(
                MnesisEvent.MAP_ITEM_COMPLETED,
                {
                    "index": result.index,
                    "success": result.success,
                    "attempts": result.attempts,
                    **extra,
                    "completed": self.completed + self.failed,
                    "total": total,
                },
            )
            return result

        async with contextlib.aclosing(bounded_map(source, one, concurrency)) as results:
            async for result in results:
                yield result

    def finish(self, total: int) -> None:
        """Publish ``map.completed`` with the tallies and the elapsed time."""
        elapsed = ms_since(self._started)
        self.publish(
            MnesisEvent.MAP_COMPLETED,
            {
                "total": total,
                "completed": self.completed,
                "failed": self.failed,
                "elapsed_ms": elapsed,
            },
        )
        logger.info(
            "%s %s finished: %d completed, %d failed in %d ms",
            self.operator,
            self.run_id,
            self.completed,
            self.failed,
            elapsed,
        )

    def publish(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        """Publish ``event`` with ``operator`` and ``run_id`` prepended to ``payload``."""
        if self._bus is not None:
            self._bus.publish(event, {"operator": self.operator, "run_id": self.run_id, **payload})
