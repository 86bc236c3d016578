"""OpenAI Responses input items into stored rounds (see :mod:`mnesis.context.intake`).

A ``user`` message starts a turn. Assistant-side items (``reasoning``, assistant
``message``, ``function_call``) make one round until a ``function_call_output`` or a user
message comes; each output is the result of a call of the batch or, in a continuation,
of a call recorded earlier. Reasoning items are kept whole (``id``, ``summary``,
``encrypted_content``) and sent back in this format only. Other item types (built-in tool
calls, item references) and non-text content are refused.
"""

from __future__ import annotations

from typing import Any

from mnesis.context.intake import Intake, IntakeMessage, Pairing, put_wire, reject
from mnesis.models.parts import MessagePart, ReasoningPart, TextPart, ToolPart, WireFields

__all__ = ["parse_responses"]

_FORMAT = "responses"


def _texts(item: dict[str, Any], kinds: tuple[str, ...], where: str) -> list[TextPart]:
    """The text parts of a message item; the first carries the item's other keys."""
    content = item.get("content")
    extra = {k: v for k, v in item.items() if k not in ("role", "content")}
    if isinstance(content, str):
        if not content and item.get("role") == "user":
            raise reject(where, "empty content")
        return [TextPart(text=content, wire={_FORMAT: {"message": extra}})]
    if not isinstance(content, list) or not content:
        raise reject(where, "content must be a string or a non-empty list of text parts")
    parts: list[TextPart] = []
    for index, block in enumerate(content):
        at = f"{where}.content[{index}]"
        if not isinstance(block, dict) or block.get("type") not in kinds:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            raise reject(at, f"only {' / '.join(kinds)} parts can be recorded, got {kind!r}")
        text = block.get("text")
        if not isinstance(text, str):
            raise reject(at, "text must be a string")
        wire: WireFields = {_FORMAT: {"block": {k: v for k, v in block.items() if k != "text"}}}
        if not parts:
            put_wire(wire, _FORMAT, "message", extra)
            put_wire(wire, _FORMAT, "content", "list")
        parts.append(TextPart(text=text, wire=wire))
    return parts


def _call(item: dict[str, Any], pairing: Pairing, where: str) -> ToolPart:
    call_id, name = item.get("call_id"), item.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise reject(where, "a function_call needs a call_id and a name")
    extra = {k: v for k, v in item.items() if k not in ("type", "call_id", "name", "arguments")}
    return pairing.json_call(name, call_id, item.get("arguments", ""), extra, where)


def _reasoning(item: dict[str, Any], where: str) -> ReasoningPart:
    summary = item.get("summary", [])
    if not isinstance(summary, list):
        raise reject(where, "a reasoning item's summary must be a list")
    texts = [str(s.get("text", "")) for s in summary if isinstance(s, dict)]
    block = {k: v for k, v in item.items() if k != "type"}
    return ReasoningPart(text="\n\n".join(texts), wire={_FORMAT: {"block": block}})


def _output(item: dict[str, Any], pairing: Pairing, where: str) -> None:
    output = item.get("output")
    extra = {k: v for k, v in item.items() if k not in ("type", "call_id", "output")}
    if isinstance(output, list):
        texts = [b.get("text") for b in output if isinstance(b, dict)]
        if len(texts) != len(output) or not all(isinstance(t, str) for t in texts):
            raise reject(where, "only text output can be recorded")
        extra["output"] = output
        output = "\n\n".join(str(t) for t in texts)
    if not isinstance(output, str):
        raise reject(where, "a function_call_output needs its output")
    pairing.result(item.get("call_id"), output, False, extra, where)


def parse_responses(items: list[dict[str, Any]]) -> Intake:
    """The :class:`Intake` of Responses input ``items``."""
    intake = Intake()
    pairing = Pairing(_FORMAT)
    round_parts: list[MessagePart] = []

    def end_round() -> None:
        if round_parts:
            intake.messages.append(IntakeMessage("assistant", list(round_parts)))
            round_parts.clear()

    for index, item in enumerate(items):
        where = f"messages[{index}]"
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message" and role == "user":
            end_round()
            texts: list[MessagePart] = list(_texts(item, ("input_text",), where))
            intake.messages.append(IntakeMessage("user", texts))
        elif kind == "message" and role == "assistant":
            round_parts.extend(_texts(item, ("output_text",), where))
        elif kind == "message":
            raise reject(
                where,
                f"a {role!r} message cannot be recorded: the system prompt is the session's "
                "(system_prompt=) or the one given to context_for_next_turn",
            )
        elif kind == "function_call":
            round_parts.append(_call(item, pairing, where))
        elif kind == "reasoning":
            round_parts.append(_reasoning(item, where))
        elif kind == "function_call_output":
            end_round()
            _output(item, pairing, where)
        else:
            raise reject(where, f"{kind!r} items cannot be recorded")
    end_round()
    intake.earlier_results = pairing.earlier
    first = items[0].get("type", "message")
    intake.joins_round = first in ("reasoning", "function_call") or (
        first == "message" and items[0].get("role") == "assistant"
    )
    return intake
