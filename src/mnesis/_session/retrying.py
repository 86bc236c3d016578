"""A session's model client that retries a failed call (``SessionConfig.retry``).

Only the opening of a reply is retried: the call and the wait for its first chunk. Once
a chunk has arrived (and may have reached the caller), a failure is final, so nothing is
ever shown twice. Each retry publishes ``llm.retry`` (``session_id``, ``attempt``,
``delay``, ``error``). The turn's timeout still covers every attempt and wait.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from mnesis.config import RetryConfig
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.llm import LLMChunk, LLMClient, LLMRequest
from mnesis.retry import call_with_retry

__all__ = ["RetryingClient", "with_retries"]


class RetryingClient:
    """``inner`` with the opening of each reply retried as ``config`` says."""

    def __init__(
        self, inner: LLMClient, config: RetryConfig, bus: EventBus, session_id: str
    ) -> None:
        self._inner = inner
        self._config = config
        self._bus = bus
        self._session_id = session_id
        wire_format = getattr(inner, "wire_format", None)
        if wire_format is not None:
            self.wire_format = wire_format

    def _published(self, attempt: int, delay: float, error: Exception) -> None:
        self._bus.publish(
            MnesisEvent.LLM_RETRY,
            {
                "session_id": self._session_id,
                "attempt": attempt + 1,
                "delay": delay,
                "error": f"{type(error).__name__}: {error}",
            },
        )

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """The reply to ``request``; its opening retried on a transient error."""

        async def opening() -> tuple[AsyncIterator[LLMChunk], LLMChunk | None]:
            chunks = self._inner.stream(request).__aiter__()
            try:
                return chunks, await anext(chunks)
            except StopAsyncIteration:
                return chunks, None
            except BaseException:
                await _close(chunks)
                raise

        chunks, first = await call_with_retry(opening, self._config, on_retry=self._published)
        try:
            if first is None:
                return
            yield first
            async for chunk in chunks:
                yield chunk
        finally:
            await _close(chunks)


async def _close(chunks: AsyncIterator[LLMChunk]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):
            await aclose()


def with_retries(llm: LLMClient, config: RetryConfig, bus: EventBus, session_id: str) -> LLMClient:
    """``llm`` itself when ``config`` never retries, else a :class:`RetryingClient`."""
    if config.max_retries == 0:
        return llm
    return RetryingClient(llm, config, bus, session_id)
