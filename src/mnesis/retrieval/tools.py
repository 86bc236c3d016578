"""The LCM tools a model calls: schemas (OpenAI/litellm and Anthropic formats) and a
dispatcher that runs a tool call against a retrieval engine.

Tool errors (bad arguments, unknown IDs, out-of-scope IDs) are returned to the
model as ``{"error": ...}`` JSON so it can correct itself; they never raise.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mnesis.errors import MnesisError
from mnesis.retrieval.engine import RetrievalEngine

__all__ = [
    "LCM_TOOL_NAMES",
    "anthropic_tools",
    "execute_lcm_tool",
    "openai_tools",
    "tool_specs",
]

_MAX_OUTPUT_CHARS = 60_000

_SPECS: dict[str, dict[str, Any]] = {
    "lcm_grep": {
        "description": (
            "Search this conversation's full history, including everything compacted out of "
            "your context. Natural-language questions work (ranked by relevance); quote exact "
            "phrases; mode='regex' for patterns. Matches say which summary in your context "
            "covers them; open it with lcm_expand."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": 'Words, "phrases" or a regex.'},
                "mode": {"type": "string", "enum": ["full_text", "regex"]},
                "scope": {"type": "string", "enum": ["messages", "summaries", "both"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "summary_id": {
                    "type": "string",
                    "description": "Only search the messages under this summary.",
                },
                "cursor": {"type": "string", "description": "next_cursor of a previous call."},
            },
            "required": ["query"],
        },
    },
    "lcm_describe": {
        "description": (
            "Describe an ID from your context or from lcm_grep: a summary (sum_…: kind, span, "
            "lineage, file IDs), a message (msg_…) or a file (file_…: path and structure)."
        ),
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"],
        },
    },
    "lcm_expand": {
        "description": (
            "Open a summary: its child summaries and/or the original messages it replaced, "
            "within a token cap. Use depth 1 first; follow unexpanded_summary_ids for more."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "summary_id": {"type": "string"},
                "depth": {"type": "integer", "minimum": 1, "maximum": 8},
                "include_messages": {"type": "boolean"},
                "token_cap": {"type": "integer", "minimum": 1},
            },
            "required": ["summary_id"],
        },
    },
    "lcm_expand_query": {
        "description": (
            "Ask a narrow question about compacted history. A bounded sub-agent searches and "
            "expands the relevant summaries and returns a short answer with cited IDs, so the "
            "raw history does not flood your context."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The question to answer."},
                "query": {"type": "string", "description": "Search words to find summaries."},
                "summary_ids": {"type": "array", "items": {"type": "string"}},
                "token_cap": {"type": "integer", "minimum": 1},
                "max_answer_tokens": {"type": "integer", "minimum": 16},
            },
            "required": ["prompt"],
        },
    },
}

LCM_TOOL_NAMES = frozenset(_SPECS)


def tool_specs(names: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Name -> ``{"description", "parameters"}`` (JSON schema) of the LCM tools."""
    chosen = list(_SPECS) if names is None else list(names)
    unknown = [n for n in chosen if n not in _SPECS]
    if unknown:
        from mnesis.errors import InvalidArgumentError

        raise InvalidArgumentError(f"unknown LCM tools {unknown}; known: {sorted(_SPECS)}")
    return {n: _SPECS[n] for n in chosen}


def openai_tools(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Tool definitions in the OpenAI / litellm ``tools=`` format."""
    return [
        {"type": "function", "function": {"name": n, **spec}}
        for n, spec in tool_specs(names).items()
    ]


def anthropic_tools(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Tool definitions in the Anthropic Messages API format."""
    return [
        {"name": n, "description": spec["description"], "input_schema": spec["parameters"]}
        for n, spec in tool_specs(names).items()
    ]


ExpandQueryFn = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _arguments(raw: dict[str, Any] | str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"tool arguments are not valid JSON: {exc}") from None
        raw = value
    if not isinstance(raw, dict):
        raise ValueError("tool arguments must be a JSON object")
    return raw


def _pick(args: dict[str, Any], allowed: Sequence[str]) -> dict[str, Any]:
    extra = sorted(set(args) - set(allowed))
    if extra:
        raise ValueError(f"unexpected arguments {extra}; allowed: {list(allowed)}")
    return {k: v for k, v in args.items() if v is not None}


async def execute_lcm_tool(
    engine: RetrievalEngine,
    name: str,
    arguments: dict[str, Any] | str | None,
    *,
    expand_query: ExpandQueryFn | None = None,
    max_token_cap: int | None = None,
) -> str:
    """Run one LCM tool call; returns the JSON text to give back to the model."""
    try:
        args = _arguments(arguments)
        if name == "lcm_grep":
            kw = _pick(args, ["query", "mode", "scope", "limit", "summary_id", "cursor"])
            query = kw.pop("query", None)
            result: Any = await engine.grep(query, **kw)
        elif name == "lcm_describe":
            result = await engine.describe(_pick(args, ["id"]).get("id"))  # type: ignore[arg-type]
        elif name == "lcm_expand":
            kw = _pick(args, ["summary_id", "depth", "include_messages", "token_cap"])
            if max_token_cap is not None:
                kw["token_cap"] = min(int(kw.get("token_cap", max_token_cap)), max_token_cap)
            result = await engine.expand(kw.pop("summary_id", None), **kw)
        elif name == "lcm_expand_query":
            if expand_query is None:
                raise ValueError("lcm_expand_query is not available here")
            kw = _pick(args, ["prompt", "query", "summary_ids", "token_cap", "max_answer_tokens"])
            return _dump(await expand_query(kw))
        else:
            raise ValueError(f"unknown tool {name!r}; known: {sorted(LCM_TOOL_NAMES)}")
    except (MnesisError, ValueError, TypeError) as exc:
        return json.dumps({"error": f"{type(exc).__name__}: {exc}"}, ensure_ascii=False)
    return _dump(result.model_dump())


def _dump(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str)
    if len(text) > _MAX_OUTPUT_CHARS:
        text = json.dumps(
            {"truncated": True, "partial": text[:_MAX_OUTPUT_CHARS]}, ensure_ascii=False
        )
    return text
