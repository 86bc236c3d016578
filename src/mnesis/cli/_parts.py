"""One-line previews of stored messages and parts, for ``mnesis show``."""

from __future__ import annotations

import json
from typing import Any

from mnesis.cli._common import abbreviate, format_time
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import (
    CompactionPart,
    FileRefPart,
    MessagePart,
    ReasoningPart,
    RetryPart,
    TextPart,
    ToolPart,
)

__all__ = [
    "full_message_json",
    "full_message_text_block",
    "message_json",
    "part_json",
    "part_preview",
]

_WIDTH = 100
_MESSAGE_FIELDS = {"id", "role", "is_summary", "created_at", "token_estimate", "finish_reason"}
"""The fields of a message that its JSON shows, next to its parts (in the model's order)."""


def _tool_args(part: ToolPart) -> str:
    for key in ("command", "path", "pattern", "query", "url"):
        value = part.input.get(key)
        if isinstance(value, str) and value:
            return value
    return json.dumps(part.input, ensure_ascii=False, sort_keys=True)


def part_preview(part: MessagePart) -> str:
    """A one-line description of ``part`` (empty for parts with nothing to show)."""
    if isinstance(part, TextPart):
        prefix = "[summary] " if part.synthetic else ""
        return prefix + abbreviate(part.text, _WIDTH)
    if isinstance(part, ToolPart):
        head = f"{part.tool_name} {abbreviate(_tool_args(part), 60)}"
        if part.status.compacted_at is not None:
            size = len(part.output or "")
            return f"⚙ {head} → output pruned from context ({size:,} chars kept in the store)"
        if part.status.state == "error":
            return f"⚙ {head} ✗ {abbreviate(part.error_message or 'error', 60)}"
        if part.status.state != "completed":
            return f"⚙ {head} ({part.status.state})"
        return f"⚙ {head} → {len(part.output or ''):,} chars"
    if isinstance(part, CompactionPart):
        return (
            f"compaction → {part.summary_id} (level {part.level}, "
            f"{part.compacted_message_count} messages)"
        )
    if isinstance(part, FileRefPart):
        return f"file {part.path} ({part.file_type}, {part.token_count:,} tokens)"
    if isinstance(part, ReasoningPart):
        return "reasoning: " + abbreviate(part.text, _WIDTH - 11)
    if isinstance(part, RetryPart):
        return f"retry #{part.attempt}: {abbreviate(part.error, _WIDTH - 12)}"
    return part.type


def part_json(part: MessagePart) -> dict[str, Any]:
    """``part`` as JSON with long text replaced by its size and a preview."""
    data: dict[str, Any] = {"type": part.type, "id": part.id, "preview": part_preview(part)}
    if isinstance(part, TextPart):
        data |= {"chars": len(part.text), "synthetic": part.synthetic}
    elif isinstance(part, ToolPart):
        data |= {
            "tool_name": part.tool_name,
            "tool_call_id": part.tool_call_id,
            "input": part.input,
            "state": part.status.state,
            "output_chars": len(part.output or ""),
            "error_message": part.error_message,
            "compacted_at": part.status.compacted_at,
        }
    elif isinstance(part, CompactionPart):
        data |= {
            "summary_id": part.summary_id,
            "level": part.level,
            "compacted_message_count": part.compacted_message_count,
        }
    return data


def message_json(message: MessageWithParts, seq: int) -> dict[str, Any]:
    """``message`` as JSON, with abbreviated parts."""
    fields = message.message.model_dump(include=_MESSAGE_FIELDS)
    return {"seq": seq, **fields, "parts": [part_json(p) for p in message.parts]}


def _full_part_text(part: MessagePart) -> str:
    if isinstance(part, TextPart):
        return ("[summary]\n" if part.synthetic else "") + part.text
    if isinstance(part, ReasoningPart):
        return "[reasoning]\n" + part.text
    if isinstance(part, ToolPart):
        head = f"[tool {part.tool_name} · {part.tool_call_id} · {part.status.state}"
        if part.status.compacted_at is not None:
            head += " · pruned from context, kept in the store"
        lines = [head + "]", "input: " + json.dumps(part.input, ensure_ascii=False, indent=2)]
        if part.output is not None:
            lines.append("output:\n" + part.output)
        if part.error_message:
            lines.append("error: " + part.error_message)
        return "\n".join(lines)
    return part_preview(part)


def full_message_text_block(message: MessageWithParts, seq: int | None = None) -> str:
    """``message`` as plain text with every part in full (tool input and output too)."""
    m = message.message
    role = "summary" if m.is_summary else m.role
    number = f"#{seq} " if seq is not None else ""
    header = (
        f"── {number}{m.id} · {role} · {format_time(m.created_at)} · {m.token_estimate:,} tokens"
    )
    return "\n".join([header, *(_full_part_text(p) for p in message.parts)])


def full_message_json(message: MessageWithParts) -> dict[str, Any]:
    """``message`` as JSON with every part in full."""
    fields = message.message.model_dump(include=_MESSAGE_FIELDS | {"session_id", "model_id"})
    return {**fields, "parts": [p.model_dump(mode="json") for p in message.parts]}
