"""Bounded parallel mapping over an async source, shared by both map operators.

Invariants of :func:`bounded_map`:

* At most ``concurrency`` calls of the mapped function run at once; a worker pulls
  the next element only when it is free, so the source is consumed lazily.
* Finished results wait in a bounded queue: a slow consumer pauses the workers
  instead of letting results pile up in memory.
* An exception escaping the function (or the source) stops the workers and is
  raised to the consumer; closing the generator early cancels the workers and
  closes the source.
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
)
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from mnesis._tasks import cancel_and_wait

__all__ = ["bounded_map", "enumerate_inputs", "iterate"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class _Crash:
    """A worker died of an unexpected exception; the consumer re-raises it."""

    error: BaseException


_DONE = object()


def _unwrap(exc: BaseException) -> BaseException:
    """The first error of a task group's group (several workers may crash at once),
    so the consumer sees a typed error rather than an ``ExceptionGroup``."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


async def bounded_map(
    source: AsyncIterator[T], fn: Callable[[T], Awaitable[R]], concurrency: int
) -> AsyncGenerator[R, None]:
    """Apply ``fn`` to every element of ``source`` with ``concurrency`` workers; yield
    the results in completion order (see the module invariants)."""
    queue: asyncio.Queue[object] = asyncio.Queue(maxsize=concurrency * 2)
    pull = asyncio.Lock()

    async def worker() -> None:
        while True:
            # An async generator cannot be advanced by two tasks at once.
            async with pull:
                try:
                    entry = await anext(source)
                except StopAsyncIteration:
                    return
            await queue.put(await fn(entry))

    async def produce() -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(concurrency):
                    group.create_task(worker())
        except Exception as exc:
            await queue.put(_Crash(_unwrap(exc)))
        else:
            await queue.put(_DONE)

    producer = asyncio.create_task(produce())
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, _Crash):
                raise item.error
            yield cast(R, item)
    finally:
        # Reached on completion, on error, and when the consumer stops early
        # (aclose or cancellation): stop the workers first, then the reader.
        try:
            await cancel_and_wait(producer)
        finally:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                await aclose()


async def enumerate_inputs(
    inputs: Iterable[Any] | AsyncIterable[Any],
) -> AsyncIterator[tuple[int, Any]]:
    """``(index, item)`` for every element of a sync or async iterable, lazily.

    Closing this generator early also closes the caller's async generator.
    """
    if isinstance(inputs, AsyncIterable):
        iterator = aiter(inputs)
        try:
            index = 0
            async for item in iterator:
                yield index, item
                index += 1
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
    else:
        for index, item in enumerate(inputs):
            yield index, item


async def iterate(items: Iterable[T]) -> AsyncIterator[T]:
    """An async iterator over an in-memory collection."""
    for item in items:
        yield item
