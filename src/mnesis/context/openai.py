"""A built context in the OpenAI Chat Completions format (also what litellm, vLLM, Ollama,
LM Studio and most OpenAI-compatible servers take).

* the system prompt first, as a ``system`` message;
* each round is an assistant message (its text as ``content``, ``None`` when it had
  none) carrying its ``tool_calls`` (``id``, ``type: "function"``, ``function.name``,
  JSON ``function.arguments``), followed by one ``role: "tool"`` message per result, in
  the order of the calls, with its ``tool_call_id``;
* a failed call's result is ``"Error: <message>"``; a tombstoned output is the
  tombstone line;
* summaries are user messages whose text starts with their annotation and ID;
* a message recorded with ``record_messages(format="openai")`` comes back as it was
  recorded: its extra fields, list-shaped content and the exact ``arguments`` string.
"""

from __future__ import annotations

from typing import Any

from mnesis.context.entries import ContextEntry, WireCall, WireTurn, wire_fields, wire_turns

__all__ = ["render_openai"]

_FORMAT = "openai"


def _tool_call(call: WireCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json},
        **wire_fields(call.wire, _FORMAT).get("block", {}),
    }


def _tool_message(call: WireCall) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, **call.result_fields(_FORMAT, "content")}


def _content(turn: WireTurn) -> str | list[dict[str, Any]] | None:
    texts = turn.texts
    if not texts:
        return None
    if turn.opening(_FORMAT).get("content") == "list":
        return [
            {"type": "text", "text": t.text, **wire_fields(t.wire, _FORMAT).get("block", {})}
            for t in texts
        ]
    return turn.text


def _turn(turn: WireTurn) -> list[dict[str, Any]]:
    extra = turn.opening(_FORMAT).get("message", {})
    calls = turn.calls
    content = _content(turn)
    if content is None and not calls:
        return []  # reasoning recorded from another format only
    if turn.role != "assistant":
        head = [{"role": turn.role, "content": content, **extra}] if content is not None else []
        if not calls:
            return head
        calls_message: dict[str, Any] = {"role": "assistant", "content": None}
    else:
        head = []
        calls_message = {"role": "assistant", "content": content, **extra}
    if calls:
        calls_message["tool_calls"] = [_tool_call(c) for c in calls]
    return [
        *head,
        calls_message,
        *(_tool_message(c) for c in calls if c.result is not None),
    ]


def render_openai(system_prompt: str, entries: list[ContextEntry]) -> list[dict[str, Any]]:
    """``entries`` as OpenAI chat messages, ``system_prompt`` first."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    for turn in wire_turns(entries):
        messages.extend(_turn(turn))
    return messages
