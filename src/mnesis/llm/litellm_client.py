"""Adapter for litellm (optional extra ``litellm``): any provider litellm supports."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from mnesis.errors import LLMError, MissingDependencyError
from mnesis.llm.base import LLMChunk, LLMRequest, ToolCall
from mnesis.models.tokens import TokenUsage

__all__ = ["LiteLLMClient"]


class LiteLLMClient:
    """Streams completions through ``litellm.acompletion``."""

    def __init__(self, **completion_kwargs: Any) -> None:
        try:
            import litellm
        except ImportError as exc:
            raise MissingDependencyError("calling real models", "litellm") from exc
        self._litellm = litellm
        self._kwargs = completion_kwargs

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Stream ``request`` and translate litellm's chunks."""
        kwargs: dict[str, Any] = dict(self._kwargs)
        if request.max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if request.tools:
            kwargs["tools"] = request.tools
        try:
            response = await self._litellm.acompletion(
                model=request.model,
                messages=request.messages,
                stream=True,
                stream_options={"include_usage": True},
                **kwargs,
            )
        except Exception as exc:
            raise LLMError(f"litellm call to {request.model} failed: {exc}") from exc
        pending: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage: TokenUsage | None = None
        async for chunk in response:
            choices = getattr(chunk, "choices", None) or []
            if choices:
                choice = choices[0]
                delta = getattr(choice, "delta", None)
                text = getattr(delta, "content", None) if delta is not None else None
                if text:
                    yield LLMChunk(text=text)
                for call in getattr(delta, "tool_calls", None) or []:
                    slot = pending.setdefault(call.index, {"id": "", "name": "", "args": ""})
                    slot["id"] = call.id or slot["id"]
                    if call.function is not None:
                        slot["name"] = call.function.name or slot["name"]
                        slot["args"] += call.function.arguments or ""
                finish = getattr(choice, "finish_reason", None) or finish
            raw_usage = getattr(chunk, "usage", None)
            if raw_usage:
                usage = TokenUsage(
                    input=getattr(raw_usage, "prompt_tokens", 0) or 0,
                    output=getattr(raw_usage, "completion_tokens", 0) or 0,
                    total=getattr(raw_usage, "total_tokens", 0) or 0,
                )
        calls = []
        for slot in pending.values():
            try:
                args = json.loads(slot["args"] or "{}")
            except json.JSONDecodeError:
                args = {"_raw": slot["args"]}
            calls.append(
                ToolCall(
                    slot["id"], slot["name"], args if isinstance(args, dict) else {"value": args}
                )
            )
        yield LLMChunk(tool_calls=calls, finish_reason=finish or "stop", usage=usage)
