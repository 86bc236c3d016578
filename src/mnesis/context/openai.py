"""A built context in the OpenAI Chat Completions format (also what litellm, vLLM, Ollama,
LM Studio and most OpenAI-compatible servers take).

* the system prompt first, as a ``system`` message;
* an assistant turn that called tools carries ``tool_calls`` (``id``,
  ``type: "function"``, ``function.name``, JSON ``function.arguments``), followed by
  one ``role: "tool"`` message per result, with its ``tool_call_id``;
* a failed call's result is ``"Error: <message>"``; a tombstoned output is the
  tombstone line;
* summaries are user messages whose text starts with their annotation and ID.
"""

from __future__ import annotations

from typing import Any

from mnesis.context.entries import ContextEntry, WireCall, WireTurn, wire_turns

__all__ = ["render_openai"]


def _tool_call(call: WireCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json},
    }


def _calls(text: str | None, calls: list[WireCall]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "assistant", "content": text or None, "tool_calls": [_tool_call(c) for c in calls]}
    ]
    for call in calls:
        if call.result is None:
            continue
        content = f"Error: {call.result}" if call.is_error else call.result
        out.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return out


def _turn(turn: WireTurn) -> list[dict[str, Any]]:
    if not turn.calls:
        return [{"role": turn.role, "content": turn.text}]
    if turn.role == "assistant":
        return _calls(turn.text, turn.calls)
    head = [{"role": turn.role, "content": turn.text}] if turn.text else []
    return head + _calls(None, turn.calls)


def render_openai(system_prompt: str, entries: list[ContextEntry]) -> list[dict[str, Any]]:
    """``entries`` as OpenAI chat messages, ``system_prompt`` first."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    for turn in wire_turns(entries):
        messages.extend(_turn(turn))
    return messages
