"""What a built context holds, in order, and the provider-neutral turns it renders to.

A :class:`~mnesis.context.builder.BuiltContext` keeps its items as
:class:`ContextEntry` values (a summary's annotated text, or a stored message with
its parts). :func:`wire_turns` turns them into :class:`WireTurn` values that the
OpenAI and Anthropic renderers map one to one onto their wire formats.

Tool calls are paired here, once for both formats. A stored
:class:`~mnesis.models.parts.ToolPart` holds a call together with its result, so
the window and compaction can never split them; what remains is the call that has
no result yet (``pending`` / ``running``). It is sent only from the last message of
the view (the call the caller is about to answer); anywhere else it would be an
orphan call, which providers reject, so it is left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from mnesis.models.message import MessageWithParts
from mnesis.models.parts import ToolPart
from mnesis.models.render import render_part, tombstone

__all__ = ["ContextEntry", "SummaryEntry", "WireCall", "WireTurn", "wire_turns"]


@dataclass(frozen=True, slots=True)
class SummaryEntry:
    """A summary in the context: its ID and its annotated text."""

    summary_id: str
    text: str


ContextEntry = SummaryEntry | MessageWithParts
"""One item of a built context, in context order."""


@dataclass(frozen=True, slots=True)
class WireCall:
    """A tool call as sent to a provider, with its result (``None``: still pending)."""

    id: str
    name: str
    arguments: dict[str, Any]
    result: str | None
    is_error: bool = False

    @property
    def arguments_json(self) -> str:
        """The arguments as the JSON string OpenAI's ``function.arguments`` carries."""
        return json.dumps(self.arguments, ensure_ascii=False, default=str)


@dataclass(slots=True)
class WireTurn:
    """One stored message (or summary) in provider-neutral form.

    ``role`` is ``user``, ``assistant`` or ``system`` (a system message stored in the
    conversation). ``calls`` are tool calls made in this turn: in an assistant turn
    they belong to it; in any other turn the renderers put them in an assistant turn
    of their own right after the text.
    """

    role: Literal["user", "assistant", "system"]
    text: str
    calls: list[WireCall] = field(default_factory=list)
    summary_id: str | None = None


def _result(part: ToolPart) -> tuple[str | None, bool]:
    """The content of the tool result the provider sees, and whether it is an error."""
    if part.status.compacted_at is not None:
        return tombstone(part.tool_name, part.status.compacted_at), False
    if part.status.state == "completed":
        return part.output or "", False
    if part.status.state == "error":
        return part.error_message or "unknown error", True
    return None, False


def wire_turns(entries: list[ContextEntry]) -> list[WireTurn]:
    """The provider-neutral turns of ``entries``; empty turns are left out."""
    last_message = max(
        (i for i, e in enumerate(entries) if isinstance(e, MessageWithParts)), default=-1
    )
    seen: dict[str, int] = {}
    turns: list[WireTurn] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, SummaryEntry):
            turns.append(WireTurn("user", entry.text, summary_id=entry.summary_id))
            continue
        texts: list[str] = []
        calls: list[WireCall] = []
        for part in entry.parts:
            if not isinstance(part, ToolPart):
                text = render_part(part)
                if text:
                    texts.append(text)
                continue
            result, is_error = _result(part)
            if result is None and index != last_message:
                continue
            count = seen.get(part.tool_call_id, 0)
            seen[part.tool_call_id] = count + 1
            call_id = part.tool_call_id if count == 0 else f"{part.tool_call_id}_{count + 1}"
            calls.append(WireCall(call_id, part.tool_name, dict(part.input), result, is_error))
        text = "\n\n".join(texts)
        if not text and not calls:
            continue
        role = entry.role
        turns.append(WireTurn("user" if role == "tool" else role, text, calls))
    return turns
