"""A plain async function as a model client (``llm=`` given a function).

The function receives the request's messages and, when its signature takes them, the
tools (``tools=``) and, for the Anthropic format, the system prompt (``system=``)::

    async def gpt(messages, *, tools=None):          # OpenAI format (the default)
        response = await openai_client.chat.completions.create(
            model="gpt-4o", messages=messages, **({"tools": tools} if tools else {}))
        return response                                # or response.choices[0].message

    async def claude(messages, *, system, tools=None):
        return await anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=2048, system=system, messages=messages,
            **({"tools": tools} if tools else {}))

    session = await MnesisSession.create(model="...", llm=gpt)
    session = await MnesisSession.create(
        model="...", llm=FunctionClient(claude, wire_format="anthropic"))

It returns the reply text (``str``), or the provider's reply (an OpenAI chat
completion or its message, an Anthropic message; SDK objects or their dicts), whose
tool calls then reach the session. A function that cannot take ``tools`` is never
handed a request with tools: :class:`~mnesis.errors.ToolsNotSupportedError` says so.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeAlias

from mnesis.errors import InvalidArgumentError, LLMResponseError, ToolsNotSupportedError
from mnesis.llm.base import LLMChunk, LLMRequest, ToolCall
from mnesis.models.tokens import TokenUsage

__all__ = ["FunctionClient", "MessagesFn", "accepts_keyword", "check_tools"]

MessagesFn: TypeAlias = Callable[..., Awaitable[Any]]
"""``async (messages, *, tools=..., system=...) -> str | reply``: see the module doc."""

_WIRE_FORMATS = ("openai", "anthropic")
_ANTHROPIC_STOP = {"tool_use": "tool_calls", "end_turn": "stop", "stop_sequence": "stop"}


def accepts_keyword(fn: Callable[..., Any], name: str) -> bool:
    """True if ``fn`` can be called with the keyword argument ``name``."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD or (p.name == name and p.kind in keyword)
        for p in parameters
    )


def check_tools(client: object, tools: list[dict[str, Any]] | None) -> None:
    """Raise :class:`ToolsNotSupportedError` if ``tools`` are offered to a client that
    declares it cannot take them (``accepts_tools = False``)."""
    if tools and getattr(client, "accepts_tools", True) is False:
        raise ToolsNotSupportedError(getattr(client, "name", type(client).__name__))


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, json.JSONDecodeError):
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"value": value}


def _as_dict(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def _anthropic_reply(data: dict[str, Any]) -> LLMChunk:
    blocks = [_as_dict(b) for b in data.get("content") or []]
    text = "".join(b.get("text") or "" for b in blocks if b.get("type") == "text")
    calls = [
        ToolCall(str(b.get("id") or ""), str(b.get("name") or ""), _arguments(b.get("input")))
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    stop = data.get("stop_reason") or ("tool_use" if calls else "end_turn")
    usage = _as_dict(data.get("usage")) or {}
    read, write = usage.get("input_tokens"), usage.get("output_tokens")
    tokens = TokenUsage(
        input=int(read or 0),
        output=int(write or 0),
        cache_read=int(usage.get("cache_read_input_tokens") or 0),
        cache_write=int(usage.get("cache_creation_input_tokens") or 0),
        total=int(read or 0) + int(write or 0),
    )
    return LLMChunk(
        text=text,
        tool_calls=calls,
        finish_reason=_ANTHROPIC_STOP.get(stop, stop),
        usage=tokens if tokens.total else None,
    )


def _openai_reply(message: dict[str, Any], finish: Any, raw_usage: Any) -> LLMChunk:
    calls = []
    for raw in message.get("tool_calls") or []:
        call = _as_dict(raw)
        function = _as_dict(call.get("function")) or {}
        calls.append(
            ToolCall(
                str(call.get("id") or ""),
                str(function.get("name") or ""),
                _arguments(function.get("arguments")),
            )
        )
    usage = _as_dict(raw_usage) or {}
    tokens = TokenUsage(
        input=int(usage.get("prompt_tokens") or 0),
        output=int(usage.get("completion_tokens") or 0),
        total=int(usage.get("total_tokens") or 0),
    )
    return LLMChunk(
        text=message.get("content") or "",
        tool_calls=calls,
        finish_reason=str(finish or ("tool_calls" if calls else "stop")),
        usage=tokens if tokens.total else None,
    )


def parse_reply(reply: Any) -> LLMChunk:
    """The function's return value as one chunk: text, tool calls, finish, usage."""
    if isinstance(reply, str):
        return LLMChunk(text=reply, finish_reason="stop")
    data = _as_dict(reply)
    if not isinstance(data, dict):
        raise LLMResponseError(
            "the llm function must return a str or a provider reply (an OpenAI chat "
            f"completion or message, an Anthropic message), got {type(reply).__name__}"
        )
    if data.get("choices"):
        choice = _as_dict(data["choices"][0])
        message = _as_dict(choice.get("message")) or {}
        return _openai_reply(message, choice.get("finish_reason"), data.get("usage"))
    if isinstance(data.get("content"), list):
        return _anthropic_reply(data)
    return _openai_reply(data, None, None)


class FunctionClient:
    """An :class:`~mnesis.llm.base.LLMClient` around a plain async function (see the
    module doc). ``wire_format="anthropic"`` hands it Anthropic Messages turns, with
    prompt-caching breakpoints, and the system prompt as ``system=``."""

    def __init__(self, fn: MessagesFn, *, wire_format: str = "openai") -> None:
        if not callable(fn):
            raise InvalidArgumentError(f"the llm function must be callable, got {fn!r}")
        if wire_format not in _WIRE_FORMATS:
            raise InvalidArgumentError(
                f"wire_format must be 'openai' or 'anthropic', got {wire_format!r}"
            )
        if wire_format == "anthropic" and not accepts_keyword(fn, "system"):
            raise InvalidArgumentError(
                "an llm function for the anthropic format must take the system prompt as a "
                "system= keyword (the Messages API carries it outside the messages)"
            )
        self.fn = fn
        self.wire_format = wire_format
        self.name = getattr(fn, "__qualname__", None) or type(fn).__name__
        self.accepts_tools = accepts_keyword(fn, "tools")
        """Whether the function takes ``tools=``; a request with tools is refused if not."""

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Call the function with ``request.messages`` (and ``tools=`` / ``system=``);
        yield its reply as one chunk."""
        check_tools(self, request.tools)
        kwargs: dict[str, Any] = {}
        if request.tools:
            kwargs["tools"] = request.tools
        if self.wire_format == "anthropic":
            kwargs["system"] = request.system
        reply = await self.fn(request.messages, **kwargs)
        yield parse_reply(reply)
