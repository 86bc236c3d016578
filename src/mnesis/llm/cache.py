"""Prompt-caching breakpoints on OpenAI-format messages, for Anthropic models reached
through an OpenAI-shaped client (litellm).

A model round names the messages that end a prefix worth caching
(:attr:`~mnesis.llm.base.LLMRequest.cache_breakpoints`); :func:`mark_breakpoints` puts
``cache_control: {"type": "ephemeral"}`` on them in the shape litellm turns into the
Anthropic request the hand-written SDK loop sends (``context_for_next_turn(format=
"anthropic", cache_control=True)``): a text block carrying ``cache_control`` for a
system, user or plain assistant message, the ``tool_result`` block itself for a tool
message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["EPHEMERAL", "MAX_BREAKPOINTS", "breakpoint_indexes", "mark_breakpoints"]

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""The ``cache_control`` value of a breakpoint."""
MAX_BREAKPOINTS = 4
"""Anthropic takes at most four breakpoints per request."""


def breakpoint_indexes(count: int, indexes: Iterable[int]) -> tuple[int, ...]:
    """``indexes`` that point into ``count`` messages, unique and in order; beyond
    :data:`MAX_BREAKPOINTS` the last ones are kept (the longest prefixes)."""
    valid = sorted({i for i in indexes if 0 <= i < count})
    return tuple(valid[-MAX_BREAKPOINTS:])


def _marked(message: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of ``message`` carrying a breakpoint, or None if it cannot carry one."""
    role = message.get("role")
    content = message.get("content")
    if role == "tool":
        return {**message, "cache_control": dict(EPHEMERAL)}
    if role == "assistant" and message.get("tool_calls"):
        return None
    if isinstance(content, str) and content:
        block = {"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}
        return {**message, "content": [block]}
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        blocks = [*content[:-1], {**content[-1], "cache_control": dict(EPHEMERAL)}]
        return {**message, "content": blocks}
    return None


def mark_breakpoints(
    messages: list[dict[str, Any]], indexes: Iterable[int]
) -> list[dict[str, Any]]:
    """A copy of ``messages`` with a breakpoint on each message at ``indexes`` (see
    :func:`breakpoint_indexes`); messages that cannot carry one (an assistant turn that
    only calls tools, an empty message) are left as they are. The input is not changed."""
    out = list(messages)
    for index in breakpoint_indexes(len(out), indexes):
        marked = _marked(out[index])
        if marked is not None:
            out[index] = marked
    return out
