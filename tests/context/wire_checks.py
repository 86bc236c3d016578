"""Validity of rendered contexts as each provider checks it (used by the wire tests)."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

__all__ = ["check_anthropic", "check_openai"]

_ANTHROPIC_ID = re.compile(r"^[A-Za-z0-9_-]+$")


def check_openai(messages: list[dict[str, Any]]) -> None:
    """Raise AssertionError unless ``messages`` is a valid Chat Completions history:
    system first; every ``tool`` message answers a call of the assistant message it
    follows (only tool messages in between); every call is answered, except calls of
    the final assistant message; IDs unique; arguments are JSON objects."""
    assert messages and messages[0]["role"] == "system"
    assert isinstance(messages[0]["content"], str)
    seen: set[str] = set()
    open_calls: set[str] = set()
    for index, message in enumerate(messages[1:], 1):
        role = message["role"]
        assert role in ("system", "user", "assistant", "tool"), role
        if role == "tool":
            assert message["tool_call_id"] in open_calls, (index, message)
            open_calls.discard(message["tool_call_id"])
            assert isinstance(message["content"], str)
            continue
        assert not open_calls, f"calls {open_calls} unanswered before message {index}"
        if role != "assistant":
            assert isinstance(message["content"], str) and set(message) == {"role", "content"}
            continue
        calls = message.get("tool_calls") or []
        content = message.get("content")
        assert calls or (isinstance(content, str) and content), f"empty assistant {index}"
        for call in calls:
            assert call["type"] == "function" and call["function"]["name"]
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
            assert call["id"] not in seen, f"duplicate id {call['id']}"
            seen.add(call["id"])
            open_calls.add(call["id"])
    if open_calls:
        last_assistant = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        tail = messages[last_assistant + 1 :]
        assert all(m["role"] == "tool" for m in tail), "unanswered calls before the end"
        assert open_calls <= {c["id"] for c in messages[last_assistant]["tool_calls"]}


def check_anthropic(body: dict[str, Any]) -> None:
    """Raise AssertionError unless ``body`` is a valid Messages request: top-level
    ``system``; user first, roles alternating; no empty content; every ``tool_result``
    answers a ``tool_use`` of the previous assistant turn and comes before any text;
    every ``tool_use`` is answered in the next turn, except the pending calls at the end
    (in the last turn, or left unanswered by a last turn of results)."""
    assert set(body) == {"system", "messages"}
    system = body["system"]
    assert isinstance(system, str) or all(b["type"] == "text" and b["text"] for b in system)
    messages = body["messages"]
    if not messages:
        return
    roles = [m["role"] for m in messages]
    assert roles[0] == "user" and set(roles) <= {"user", "assistant"}
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    seen: set[str] = set()
    breakpoints = 1 if isinstance(system, list) else 0
    for index, message in enumerate(messages):
        blocks = message["content"]
        if isinstance(blocks, str):  # a plain string content is one text block
            blocks = [{"type": "text", "text": blocks}]
        assert isinstance(blocks, list) and blocks, f"empty turn {index}"
        breakpoints += sum("cache_control" in b for b in blocks)
        kinds = [b["type"] for b in blocks]
        for block in blocks:
            if block["type"] == "text":
                assert isinstance(block["text"], str) and block["text"]
        if message["role"] == "assistant":
            assert set(kinds) <= {"text", "tool_use", "thinking", "redacted_thinking"}
            uses = [b for b in blocks if b["type"] == "tool_use"]
            for use in uses:
                assert _ANTHROPIC_ID.match(use["id"]) and use["id"] not in seen
                assert isinstance(use["input"], dict)
                seen.add(use["id"])
            if uses and index + 1 < len(messages):
                answered = {
                    b["tool_use_id"]
                    for b in messages[index + 1]["content"]
                    if b["type"] == "tool_result"
                }
                wanted = {u["id"] for u in uses}
                if index + 2 == len(messages):
                    # The last turn may leave pending calls for the caller to answer.
                    assert answered <= wanted, (index, answered)
                else:
                    assert answered == wanted, (index, answered)
        else:
            assert set(kinds) <= {"text", "tool_result"}
            results = [b for b in blocks if b["type"] == "tool_result"]
            assert kinds[: len(results)] == ["tool_result"] * len(results), kinds
            if results:
                previous = messages[index - 1] if index else {"content": []}
                uses = {b["id"] for b in previous["content"] if b["type"] == "tool_use"}
                assert {r["tool_use_id"] for r in results} <= uses
                for result in results:
                    assert "content" not in result or isinstance(result["content"], str)
    assert breakpoints <= 4
