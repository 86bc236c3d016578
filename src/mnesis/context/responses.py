"""A built context in the OpenAI Responses format: the ``input`` items of
``client.responses.create`` (also what the OpenAI Agents SDK keeps as its session items).

* the system prompt first, as a ``{"role": "system", "content": ...}`` message;
* user text as ``{"role": "user", "content": ...}``; summaries likewise, annotated;
* each round is its items in stored order (``reasoning`` items recorded from the
  Responses API, assistant messages, ``function_call`` items), then one
  ``function_call_output`` per result, in the order of the calls (a failed call's output
  is ``"Error: <message>"``, a tombstoned one the tombstone line);
* text that was not recorded in this format is an easy-input assistant message
  ``{"role": "assistant", "content": text}``;
* items recorded with ``record_messages(format="responses")`` come back as they were
  recorded (their ``id``, ``status`` and other fields, ``encrypted_content`` of reasoning).
"""

from __future__ import annotations

from typing import Any

from mnesis.context.entries import (
    ContextEntry,
    WireCall,
    WireReasoning,
    WireText,
    WireTurn,
    wire_fields,
    wire_turns,
)

__all__ = ["render_responses"]

_FORMAT = "responses"


def _message(role: str, texts: list[WireText], kind: str) -> dict[str, Any]:
    """One message item of ``texts`` (``kind``: ``input_text`` or ``output_text``)."""
    opening = wire_fields(texts[0].wire, _FORMAT)
    extra = opening.get("message", {})
    if opening.get("content") == "list":
        content: str | list[dict[str, Any]] = [
            {"type": kind, "text": t.text, **wire_fields(t.wire, _FORMAT).get("block", {})}
            for t in texts
        ]
    else:
        content = "\n\n".join(t.text for t in texts)
    return {"role": role, "content": content, **extra}


def _call(call: WireCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments_json,
        **wire_fields(call.wire, _FORMAT).get("block", {}),
    }


def _output(call: WireCall) -> dict[str, Any]:
    fields = call.result_fields(_FORMAT, "output")
    return {"type": "function_call_output", "call_id": call.id, **fields}


def _turn(turn: WireTurn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    role = turn.role
    kind = "output_text" if role == "assistant" else "input_text"
    group: list[WireText] = []

    def flush() -> None:
        if group:
            items.append(_message(role, list(group), kind))
            group.clear()

    for block in turn.blocks:
        if isinstance(block, WireText):
            if group and "message" in wire_fields(block.wire, _FORMAT):
                flush()  # the first text of another recorded message item
            group.append(block)
            continue
        flush()
        if isinstance(block, WireReasoning):
            recorded = wire_fields(block.wire, _FORMAT).get("block")
            if isinstance(recorded, dict):
                items.append({"type": "reasoning", **recorded})
        else:
            items.append(_call(block))
    flush()
    items.extend(_output(c) for c in turn.calls if c.result is not None)
    return items


def render_responses(system_prompt: str, entries: list[ContextEntry]) -> list[dict[str, Any]]:
    """``entries`` as Responses input items, ``system_prompt`` first."""
    items: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    for turn in wire_turns(entries):
        items.extend(_turn(turn))
    return items
