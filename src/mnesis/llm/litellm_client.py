"""Adapter for litellm (optional extra ``litellm``): any provider litellm supports.

Nothing here imports litellm until a :class:`LiteLLMClient` is constructed. The import
sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` first (unless the environment already sets
it), so an offline machine does not stall retrying to download litellm's model price
map.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from mnesis.errors import LLMError, MissingDependencyError
from mnesis.llm.base import LLMChunk, LLMRequest, ToolCall
from mnesis.llm.cache import mark_breakpoints
from mnesis.models.tokens import TokenUsage

__all__ = ["LiteLLMClient", "caches_prompts", "import_litellm", "litellm_available"]

_COST_MAP_SWITCH = "LITELLM_LOCAL_MODEL_COST_MAP"


def litellm_available() -> bool:
    """True if litellm can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec("litellm") is not None
    except (ImportError, ValueError):
        return False


def import_litellm() -> ModuleType:
    """Import litellm offline-safe; :class:`MissingDependencyError` if it is not installed."""
    os.environ.setdefault(_COST_MAP_SWITCH, "True")
    try:
        import litellm
    except ImportError as exc:
        raise MissingDependencyError("calling real models", "litellm") from exc
    return litellm


def _has_mcp_gateway() -> bool:
    """Recent litellm versions route any ``tools=`` call through their MCP gateway check,
    which imports the ``mcp`` package; ``_skip_mcp_handler`` (which those versions
    accept) skips it. mnesis never sends MCP tools."""
    try:
        return importlib.util.find_spec("litellm.responses.mcp") is not None
    except (ImportError, ValueError):
        return False


def caches_prompts(model: str) -> bool:
    """True for the model strings litellm sends to Anthropic's Messages API
    (``anthropic/...``, or a bare ``claude-...``), whose requests take ``cache_control``
    breakpoints."""
    lowered = model.lower()
    return lowered.startswith("anthropic/") or lowered.startswith("claude")


def _usage(raw: Any) -> TokenUsage:
    return TokenUsage(
        input=getattr(raw, "prompt_tokens", 0) or 0,
        output=getattr(raw, "completion_tokens", 0) or 0,
        total=getattr(raw, "total_tokens", 0) or 0,
    )


def _tool_call(call_id: str, name: str, raw_args: str) -> ToolCall:
    try:
        args = json.loads(raw_args or "{}")
    except json.JSONDecodeError:
        args = {"_raw": raw_args}
    return ToolCall(call_id, name, args if isinstance(args, dict) else {"value": args})


class LiteLLMClient:
    """Model calls through ``litellm.acompletion``, messages in the OpenAI format.

    ``api_base`` and ``api_key`` point it at a server (an OpenAI-compatible one such as
    vLLM, Ollama or LM Studio with an ``openai/<model>`` model string, or Anthropic
    with ``anthropic/<model>``); any other keyword (``temperature``, ``timeout``,
    ``extra_headers``, ...) is passed to every call. ``stream=False`` asks for whole
    responses instead of server-sent events.

    ``cache_control`` places Anthropic prompt-caching breakpoints on the messages a
    session names (:attr:`~mnesis.llm.base.LLMRequest.cache_breakpoints`: the system
    prompt, the end of the summaries, the last message): ``None`` (the default) for
    Anthropic models (``anthropic/...``, ``claude-...``), ``True`` for every model (a
    provider litellm maps ``cache_control`` for, such as Bedrock or Vertex AI Claude),
    ``False`` never.
    """

    wire_format = "openai"
    """The message format :class:`~mnesis.llm.base.LLMRequest` carries for this client."""

    def __init__(
        self,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        stream: bool = True,
        cache_control: bool | None = None,
        **options: Any,
    ) -> None:
        self._litellm = import_litellm()
        self._stream = stream
        self.cache_control = cache_control
        """``None``: breakpoints for Anthropic models only; ``True`` / ``False``: always / never."""
        self._options: dict[str, Any] = dict(options)
        if api_base is not None:
            self._options["api_base"] = api_base
        if api_key is not None:
            self._options["api_key"] = api_key
        self._skip_mcp = _has_mcp_gateway()

    def _kwargs(self, request: LLMRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(self._options)
        if request.max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.tools:
            kwargs["tools"] = request.tools
            if self._skip_mcp:
                kwargs["_skip_mcp_handler"] = True
        if self._stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    def _messages(self, request: LLMRequest) -> list[dict[str, Any]]:
        caching = self.cache_control
        if caching is None:
            caching = caches_prompts(request.model)
        if not caching or not request.cache_breakpoints:
            return request.messages
        return mark_breakpoints(request.messages, request.cache_breakpoints)

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        """Stream ``request`` and translate litellm's chunks."""
        try:
            response = await self._litellm.acompletion(
                model=request.model, messages=self._messages(request), **self._kwargs(request)
            )
        except Exception as exc:
            raise LLMError(f"litellm call to {request.model} failed: {exc}") from exc
        if not self._stream:
            yield self._whole(response)
            return
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
                usage = _usage(raw_usage)
        calls = [_tool_call(s["id"], s["name"], s["args"]) for s in pending.values()]
        yield LLMChunk(tool_calls=calls, finish_reason=finish or "stop", usage=usage)

    @staticmethod
    def _whole(response: Any) -> LLMChunk:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMError("the model returned no choices")
        message = getattr(choices[0], "message", None)
        calls = [
            _tool_call(c.id or "", c.function.name or "", c.function.arguments or "")
            for c in (getattr(message, "tool_calls", None) or [])
        ]
        raw_usage = getattr(response, "usage", None)
        return LLMChunk(
            text=getattr(message, "content", None) or "",
            tool_calls=calls,
            finish_reason=getattr(choices[0], "finish_reason", None) or "stop",
            usage=_usage(raw_usage) if raw_usage else None,
        )
