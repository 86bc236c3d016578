"""The LCM tools a model calls, defined once: their input schemas (enums, bounds,
per-parameter descriptions), output schemas, and a dispatcher that runs a call
against a retrieval engine.

Every adapter renders these same definitions: ``openai_tools``/``anthropic_tools``
(``MnesisSession.lcm_tool_definitions``) and the MCP server (which adds a
``session_id`` argument, :data:`SESSION_ID_PARAMETER`, and the MCP-only
``lcm_sessions`` tool, :data:`SESSIONS_TOOL`).

:func:`run_lcm_tool` returns the result as a JSON-ready dict and raises on bad calls;
:func:`execute_lcm_tool` wraps it for a model's tool loop, returning JSON text with
errors (bad arguments, unknown IDs, out-of-scope IDs) as ``{"error": ...}`` so the
model can correct itself.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel, TypeAdapter

from mnesis.errors import InvalidArgumentError, MnesisError
from mnesis.models.limits import MAX_JSON_DEPTH, json_depth_exceeds
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.results import DescribeResult, ExpandQueryResult, ExpandResult, GrepResult

__all__ = [
    "LCM_TOOL_NAMES",
    "SESSIONS_TOOL",
    "SESSION_ID_PARAMETER",
    "ExpandQueryFn",
    "anthropic_tools",
    "execute_lcm_tool",
    "openai_tools",
    "output_schema",
    "run_lcm_tool",
    "tool_specs",
]

_MAX_OUTPUT_CHARS = 60_000

_ID = "An ID from your context or from a previous lcm_* result."

_SPECS: dict[str, dict[str, Any]] = {
    "lcm_grep": {
        "description": (
            "Search this conversation's full history, including everything compacted out of "
            "your context. Natural-language questions work (ranked by relevance); quote exact "
            "phrases; mode='regex' for patterns. Matches say which summary in your context "
            "covers them and, for compacted messages, the leaf summary that holds the "
            "original turn: lcm_expand that leaf (or the message ID) to read it."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": 'Words, "quoted phrases" or (mode=regex) a regular expression.',
                },
                "mode": {
                    "type": "string",
                    "enum": ["full_text", "regex"],
                    "default": "full_text",
                    "description": "full_text: ranked word search; regex: pattern, newest first.",
                },
                "scope": {
                    "type": "string",
                    "enum": ["messages", "summaries", "both"],
                    "default": "both",
                    "description": "Search original messages, summaries, or both.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 100,
                    "default": 20,
                    "description": "Most matches to return on this page.",
                },
                "summary_id": {
                    "type": "string",
                    "description": "Only search the messages under this summary (sum_…).",
                },
                "cursor": {
                    "type": "string",
                    "description": "next_cursor of a previous lcm_grep call, for the next page.",
                },
                "include_lcm_tools": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "Also search the inputs and outputs of earlier lcm_* tool calls "
                        "(left out by default: they repeat what they found)."
                    ),
                },
            },
            "required": ["query"],
        },
    },
    "lcm_describe": {
        "description": (
            "Describe an ID from your context or from lcm_grep: a summary (sum_…: kind, span, "
            "lineage, file IDs, the entities it dropped and where they are), a message (msg_…) "
            "or a file (file_…: path and structure)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "minLength": 1,
                    "description": f"sum_…, msg_… or file_…. {_ID}",
                }
            },
            "required": ["id"],
        },
    },
    "lcm_expand": {
        "description": (
            "Open a summary: its child summaries and/or the original messages it replaced, "
            "within a token cap. Use depth 1 first; when truncated, pass next_cursor back "
            "for the rest; follow unexpanded_summary_ids to go deeper. Given a message ID "
            "(msg_…), it opens the leaf summary covering that message: the original turn."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "summary_id": {
                    "type": "string",
                    "minLength": 1,
                    "description": f"sum_… (or a msg_… to open its leaf summary). {_ID}",
                },
                "depth": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 8,
                    "default": 1,
                    "description": "Levels to open: 1 gives children or a leaf's messages.",
                },
                "include_messages": {
                    "type": "boolean",
                    "default": True,
                    "description": "Include the original messages under leaf summaries.",
                },
                "token_cap": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Most tokens on this page (default: the configured cap).",
                },
                "cursor": {
                    "type": "string",
                    "description": (
                        "next_cursor of a previous lcm_expand call with the same summary_id, "
                        "depth and include_messages, for the next page."
                    ),
                },
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
                "prompt": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The question to answer.",
                },
                "query": {"type": "string", "description": "Search words to find summaries."},
                "summary_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Summaries to answer from (instead of, or with, query).",
                },
                "token_cap": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Most tokens of history the sub-agent may read.",
                },
                "max_answer_tokens": {
                    "type": "integer",
                    "minimum": 16,
                    "default": 800,
                    "description": "Most tokens of the answer.",
                },
            },
            "required": ["prompt"],
        },
    },
}

LCM_TOOL_NAMES = frozenset(_SPECS)
"""The tools a session runs for its model (``lcm_sessions`` is MCP-only)."""

SESSION_ID_PARAMETER: dict[str, Any] = {
    "type": "string",
    "description": (
        "The session to search (sess_…); default: the server's default session, else the "
        "newest one. lcm_sessions lists them."
    ),
}
"""The ``session_id`` argument adapters serving several sessions add to every tool."""

SESSIONS_TOOL: dict[str, Any] = {
    "description": (
        "List the sessions this server serves, newest first (id, model, agent, title, "
        "created_at); pass an id as session_id to the other tools."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 200,
                "default": 20,
                "description": "Most sessions to list.",
            }
        },
    },
}
"""The MCP-only ``lcm_sessions`` tool."""


class SessionSummary(BaseModel):
    """One session as ``lcm_sessions`` lists it."""

    id: str
    model: str
    agent: str
    parent_id: str | None = None
    title: str | None = None
    created_at: int


class SessionList(BaseModel):
    """The result of ``lcm_sessions``."""

    sessions: list[SessionSummary]


def _object_schema(adapter: TypeAdapter[Any]) -> dict[str, Any]:
    schema = adapter.json_schema()
    if schema.get("type") != "object":
        # MCP wants an object at the root; a union of objects is one.
        schema = {"type": "object", **schema}
    return schema


_OUTPUTS: dict[str, type[BaseModel] | Any] = {
    "lcm_grep": GrepResult,
    "lcm_describe": DescribeResult,
    "lcm_expand": ExpandResult,
    "lcm_expand_query": ExpandQueryResult,
    "lcm_sessions": SessionList,
}


def output_schema(name: str) -> dict[str, Any]:
    """The JSON schema of what tool ``name`` returns (the result models of retrieval)."""
    if name not in _OUTPUTS:
        raise InvalidArgumentError(f"unknown LCM tool {name!r}; known: {sorted(_OUTPUTS)}")
    return _object_schema(TypeAdapter(_OUTPUTS[name]))


def tool_specs(names: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Name -> ``{"description", "parameters"}`` (JSON schema) of the LCM tools (copies)."""
    chosen = list(_SPECS) if names is None else list(names)
    unknown = [n for n in chosen if n not in _SPECS]
    if unknown:
        raise InvalidArgumentError(f"unknown LCM tools {unknown}; known: {sorted(_SPECS)}")
    return {n: copy.deepcopy(_SPECS[n]) for n in chosen}


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


_TOO_DEEP = f"tool arguments nest deeper than {MAX_JSON_DEPTH} levels"

ExpandQueryFn = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _arguments(raw: dict[str, Any] | str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"tool arguments are not valid JSON: {exc}") from None
        except RecursionError:
            raise InvalidArgumentError(_TOO_DEEP) from None
        raw = value
    if not isinstance(raw, dict):
        raise InvalidArgumentError("tool arguments must be a JSON object")
    if json_depth_exceeds(raw):
        raise InvalidArgumentError(_TOO_DEEP)
    return raw


def _pick(args: dict[str, Any], name: str) -> dict[str, Any]:
    allowed = list(_SPECS[name]["parameters"]["properties"])
    extra = sorted(set(args) - set(allowed))
    if extra:
        raise ValueError(f"unexpected arguments {extra}; allowed: {allowed}")
    return {k: v for k, v in args.items() if v is not None}


async def run_lcm_tool(
    engine: RetrievalEngine,
    name: str,
    arguments: dict[str, Any] | str | None,
    *,
    expand_query: ExpandQueryFn | None = None,
    max_token_cap: int | None = None,
) -> dict[str, Any]:
    """Run one LCM tool call; returns its result as a JSON-ready dict.

    Raises a ``MnesisError`` (unknown or out-of-scope IDs, bad values), ``ValueError``
    or ``TypeError`` (malformed arguments) for a call that cannot run.
    """
    args = _arguments(arguments)
    if name == "lcm_grep":
        kw = _pick(args, name)
        query = kw.pop("query", None)
        result: BaseModel = await engine.grep(query, **kw)
    elif name == "lcm_describe":
        result = await engine.describe(_pick(args, name).get("id"))  # type: ignore[arg-type]
    elif name == "lcm_expand":
        kw = _pick(args, name)
        if max_token_cap is not None:
            kw["token_cap"] = min(int(kw.get("token_cap", max_token_cap)), max_token_cap)
        result = await engine.expand(kw.pop("summary_id", None), **kw)
    elif name == "lcm_expand_query":
        if expand_query is None:
            raise ValueError("lcm_expand_query is not available here")
        return await expand_query(_pick(args, name))
    else:
        raise ValueError(f"unknown tool {name!r}; known: {sorted(LCM_TOOL_NAMES)}")
    return result.model_dump(mode="json")


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
        data = await run_lcm_tool(
            engine, name, arguments, expand_query=expand_query, max_token_cap=max_token_cap
        )
    except (MnesisError, ValueError, TypeError) as exc:
        return json.dumps({"error": f"{type(exc).__name__}: {exc}"}, ensure_ascii=False)
    return _dump(data)


def _dump(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str)
    if len(text) > _MAX_OUTPUT_CHARS:
        text = json.dumps(
            {"truncated": True, "partial": text[:_MAX_OUTPUT_CHARS]}, ensure_ascii=False
        )
    return text
