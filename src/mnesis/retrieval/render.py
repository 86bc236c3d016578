"""How retrieval shows stored text: snippets around a match, messages in full.

Retrieval always shows what was said: tool outputs that pruning tombstoned in the
context are rendered with their original output.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.models.message import MessageWithParts
from mnesis.models.parts import ToolPart
from mnesis.models.render import render_message_text
from mnesis.store.search_text import original_text

__all__ = ["full_message_text", "snippet", "uncompacted"]

SNIPPET_CHARS = 240


def snippet(text: str, needles: Sequence[str], start: int = -1) -> str:
    """About ``SNIPPET_CHARS`` of ``text`` around the first match.

    The match is at ``start`` if given (a regex scan passes the span it found: a
    pattern is never matched again here), else the earliest of ``needles``
    (case-insensitive); without one the snippet is the start of the text.
    """
    body = original_text(text)
    if start < 0:
        lowered = body.casefold()
        for needle in needles:
            pos = lowered.find(needle.casefold())
            if pos >= 0 and (start < 0 or pos < start):
                start = pos
    begin = max(0, start - SNIPPET_CHARS // 3) if start >= 0 else 0
    piece = " ".join(body[begin : begin + SNIPPET_CHARS].split())
    return ("…" if begin else "") + piece + ("…" if begin + SNIPPET_CHARS < len(body) else "")


def uncompacted(message: MessageWithParts) -> MessageWithParts:
    """A copy whose tool parts show their original output (tombstones lifted)."""
    if not any(isinstance(p, ToolPart) and p.status.compacted_at for p in message.parts):
        return message
    parts = []
    for part in message.parts:
        if isinstance(part, ToolPart) and part.status.compacted_at:
            part = part.model_copy(
                update={"status": part.status.model_copy(update={"compacted_at": None})}
            )
        parts.append(part)
    return MessageWithParts.model_construct(message=message.message, parts=parts)


def full_message_text(message: MessageWithParts) -> str:
    """``message`` rendered as text, tombstoned tool outputs shown in full."""
    return render_message_text(uncompacted(message))
