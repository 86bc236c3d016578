"""The small protocol every model client implements (bring your own LLM).

A client turns an :class:`LLMRequest` into an async stream of :class:`LLMChunk`.
Text arrives in ``text`` deltas; the last chunk carries ``finish_reason``,
``usage`` and any ``tool_calls``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mnesis.errors import LLMError, LLMTimeoutError
from mnesis.models.tokens import TokenUsage

__all__ = ["LLMChunk", "LLMClient", "LLMRequest", "LLMResponse", "ToolCall", "complete"]


@dataclass(slots=True)
class LLMRequest:
    """One model call."""

    model: str
    messages: list[dict[str, Any]]
    max_tokens: int | None = None
    tools: list[dict[str, Any]] | None = None
    purpose: str = "turn"
    """``turn``, ``compaction``, ``map`` or ``expand``: lets fakes and metrics tell calls apart."""
    system: str | list[dict[str, Any]] | None = None
    """The Anthropic ``system`` field, set only for clients whose ``wire_format`` is
    ``"anthropic"`` (their ``messages`` then hold only user and assistant turns): a list
    of text blocks when it carries a prompt-caching breakpoint, else a string."""
    cache_breakpoints: tuple[int, ...] = ()
    """For OpenAI-format ``messages``: the indexes of the messages that end a prefix worth
    caching (the system prompt, the last summary, the last message; at most four). A
    client whose provider takes prompt-caching breakpoints marks them (the litellm client
    does for Anthropic models); any other client ignores them."""
    temperature: float | None = None
    """Sampling temperature; ``None`` (the default) leaves it to the model."""


@dataclass(slots=True)
class ToolCall:
    """A tool the model asked to call."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class LLMChunk:
    """A streamed piece of a response."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: TokenUsage | None = None


@dataclass(slots=True)
class LLMResponse:
    """A whole response, collected from the stream."""

    text: str
    tool_calls: list[ToolCall]
    finish_reason: str
    usage: TokenUsage


@runtime_checkable
class LLMClient(Protocol):
    """Anything that can stream a model response.

    Session turns send ``messages`` in the OpenAI chat format (tool calls as
    ``tool_calls``, results as ``tool`` messages). A client with the attribute
    ``wire_format = "anthropic"`` gets Anthropic Messages turns instead, with the
    system prompt in :attr:`LLMRequest.system` and prompt-caching breakpoints
    (``cache_control``) already placed, unless it declares ``cache_control = False``.
    """

    def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Stream the response to ``request``."""
        ...


async def complete(client: LLMClient, request: LLMRequest, *, timeout: float) -> LLMResponse:
    """Collect a whole response; raises :class:`LLMTimeoutError` / :class:`LLMError`."""

    async def _collect() -> LLMResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        finish = "stop"
        usage = TokenUsage()
        async for chunk in client.stream(request):
            if chunk.text:
                texts.append(chunk.text)
            calls.extend(chunk.tool_calls)
            if chunk.finish_reason:
                finish = chunk.finish_reason
            if chunk.usage is not None:
                usage = chunk.usage
        return LLMResponse("".join(texts), calls, finish, usage)

    try:
        async with asyncio.timeout(timeout):
            return await _collect()
    except TimeoutError as exc:
        raise LLMTimeoutError(f"model {request.model} did not answer within {timeout}s") from exc
    except LLMError:
        raise
    except Exception as exc:
        raise LLMError(f"model {request.model} failed: {type(exc).__name__}: {exc}") from exc
