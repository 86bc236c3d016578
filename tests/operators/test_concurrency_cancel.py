"""``bounded_map``: a consumer cancelled while the workers stop keeps its cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mnesis.operators.concurrency import bounded_map


async def test_a_consumer_cancelled_while_the_workers_stop_is_cancelled_and_closes_the_source() -> (
    None
):
    stopping, release = asyncio.Event(), asyncio.Event()
    closed: list[bool] = []

    async def source() -> AsyncIterator[int]:
        try:
            for item in range(3):
                yield item
        finally:
            closed.append(True)

    async def fn(item: int) -> int:
        if item == 0:
            return item
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopping.set()
            await release.wait()
            raise
        return item

    async def consume() -> None:
        results = bounded_map(source(), fn, 2)
        assert await anext(results) == 0
        await results.aclose()  # stops the workers, which take until release

    caller = asyncio.create_task(consume())
    await stopping.wait()
    caller.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert closed == [True]
