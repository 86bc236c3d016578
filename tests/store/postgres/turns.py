"""One generated turn's message, for the PostgreSQL tests that fill a store by hand."""

from __future__ import annotations

from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.store.base import NewMessage

T0 = 1_748_772_000_000
"""The first turn's time (ms)."""


def turn_message(sid: str, turn: int, text: str, output: str) -> NewMessage:
    """Turn ``turn`` of ``sid``: a user message on even turns, an assistant one on odd
    turns, holding ``text``; every third turn also holds a ``read`` tool part with
    ``output``."""
    role = "user" if turn % 2 == 0 else "assistant"
    message = Message(id=new_id("msg"), session_id=sid, role=role, created_at=T0 + turn)
    parts: list[TextPart | ToolPart] = [TextPart(text=text)]
    if turn % 3 == 0:
        parts.append(
            ToolPart(
                tool_name="read",
                tool_call_id=f"call_{turn}",
                input={"q": "x"},
                output=output,
                status=ToolStatus(state="completed"),
            )
        )
    return NewMessage(message, list(parts))
