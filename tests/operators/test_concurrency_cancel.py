"""``bounded_map``: a consumer cancelled while the workers stop keeps its cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from mnesis.operators.concurrency import bounded_map
from tests.cancelling import cancel_while_stopping, stop_slowly


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
        await stop_slowly(stopping, release)
        return item

    async def consume() -> None:
        results = bounded_map(source(), fn, 2)
        assert await anext(results) == 0
        await results.aclose()  # stops the workers, which take until release

    await cancel_while_stopping(consume(), stopping, release)
    assert closed == [True]
