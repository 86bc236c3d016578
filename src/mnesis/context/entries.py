"""What a built context holds, in order, and the provider-neutral turns it renders to.

A :class:`~mnesis.context.builder.BuiltContext` keeps its items as
:class:`ContextEntry` values (a summary's annotated text, or a stored message with
its parts). :func:`wire_turns` turns them into :class:`WireTurn` values that the
OpenAI, Anthropic and Responses renderers map one to one onto their wire formats.

**Rounds.** A stored assistant message is one *round*: one provider message (its text,
reasoning and tool calls, in the order of its parts), then the results of its calls.
``send`` stores each model call as its own assistant message, and so do ``record`` (a
text after a tool call starts a new message) and ``record_messages`` (one per
provider message); consecutive assistant messages are consecutive rounds.

Tool calls are paired here, once for every format. A stored
:class:`~mnesis.models.parts.ToolPart` holds a call together with its result, so
the window and compaction can never split them; what remains is the call that has
no result yet (``pending`` / ``running``). It is sent only from the last message of
the view (the call the caller is about to answer); anywhere else it would be an
orphan call, which providers reject, so it is left out.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from mnesis.models.message import MessageWithParts
from mnesis.models.parts import ReasoningPart, TextPart, ToolPart, WireFields
from mnesis.models.render import render_part, tombstone

__all__ = [
    "ContextEntry",
    "SummaryEntry",
    "WireBlock",
    "WireCall",
    "WireReasoning",
    "WireText",
    "WireTurn",
    "wire_fields",
    "wire_turns",
]


@dataclass(frozen=True, slots=True)
class SummaryEntry:
    """A summary in the context: its ID and its annotated text."""

    summary_id: str
    text: str


ContextEntry = SummaryEntry | MessageWithParts
"""One item of a built context, in context order."""


def wire_fields(wire: WireFields | None, format: str) -> dict[str, Any]:
    """A copy of the recorded provider fields of ``format`` (empty when there are none):
    a caller may change the rendered messages without touching the stored parts."""
    if not wire:
        return {}
    fields = wire.get(format)
    return copy.deepcopy(fields) if isinstance(fields, dict) else {}


@dataclass(frozen=True, slots=True)
class WireText:
    """A text block (``wire``: the provider fields it was recorded with)."""

    text: str
    wire: WireFields | None = None


@dataclass(frozen=True, slots=True)
class WireReasoning:
    """A reasoning block; sent only in a format its ``wire`` holds."""

    text: str
    wire: WireFields | None = None


@dataclass(frozen=True, slots=True)
class WireCall:
    """A tool call as sent to a provider, with its result (``None``: still pending)."""

    id: str
    name: str
    arguments: dict[str, Any]
    result: str | None
    is_error: bool = False
    wire: WireFields | None = None
    tombstoned: bool = False

    @property
    def arguments_json(self) -> str:
        """The arguments as the JSON string OpenAI's ``function.arguments`` carries
        (the string recorded, when there is one)."""
        for format in ("openai", "responses"):
            raw = wire_fields(self.wire, format).get("arguments")
            if isinstance(raw, str):
                return raw
        return json.dumps(self.arguments, ensure_ascii=False, default=str)

    def result_fields(self, format: str, key: str) -> dict[str, Any]:
        """The result as OpenAI's two formats carry it: its text under ``key``
        (``"Error: <message>"`` for a failed call), then the fields recorded with it in
        ``format``; a recorded list-shaped value under ``key`` is left out when the text
        replaces it (a tombstone, an error)."""
        assert self.result is not None
        text = f"Error: {self.result}" if self.is_error else self.result
        extra = wire_fields(self.wire, format).get("result", {})
        if self.tombstoned or self.is_error:
            extra.pop(key, None)
        return {key: text, **extra}


WireBlock = WireText | WireReasoning | WireCall
"""One block of a turn, in stored order."""


@dataclass(slots=True)
class WireTurn:
    """One stored message (or summary) in provider-neutral form.

    ``role`` is ``user``, ``assistant`` or ``system`` (a system message stored in the
    conversation). ``blocks`` are its texts, reasoning and tool calls in stored order.
    Calls in an assistant turn belong to it; in any other turn the renderers put them
    in an assistant turn of their own right after the text.
    """

    role: Literal["user", "assistant", "system"]
    blocks: list[WireBlock] = field(default_factory=list)
    summary_id: str | None = None

    @property
    def texts(self) -> list[WireText]:
        """The text blocks, in order."""
        return [b for b in self.blocks if isinstance(b, WireText)]

    @property
    def text(self) -> str:
        """The text blocks joined by blank lines."""
        return "\n\n".join(b.text for b in self.texts)

    @property
    def calls(self) -> list[WireCall]:
        """The tool calls, in order."""
        return [b for b in self.blocks if isinstance(b, WireCall)]

    def opening(self, format: str) -> dict[str, Any]:
        """The recorded fields of ``format`` of the message this turn was recorded from
        (they live on its first block)."""
        for block in self.blocks:
            return wire_fields(block.wire, format)
        return {}


def _result(part: ToolPart) -> tuple[str | None, bool]:
    """The content of the tool result the provider sees, and whether it is an error."""
    if part.status.compacted_at is not None:
        return tombstone(part.tool_name, part.status.compacted_at), False
    if part.status.state == "completed":
        return part.output or "", False
    if part.status.state == "error":
        error = part.error_message
        return (error if error is not None else "unknown error"), True
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
            turns.append(WireTurn("user", [WireText(entry.text)], summary_id=entry.summary_id))
            continue
        blocks: list[WireBlock] = []
        for part in entry.parts:
            if isinstance(part, ReasoningPart):
                if part.wire:
                    blocks.append(WireReasoning(part.text, part.wire))
                continue
            if not isinstance(part, ToolPart):
                text = render_part(part)
                # An empty text is kept only when it was recorded (an assistant message
                # whose content was "" rather than absent).
                if text or (isinstance(part, TextPart) and part.wire and not part.ignored):
                    wire = part.wire if isinstance(part, TextPart) else None
                    blocks.append(WireText(text or "", wire))
                continue
            result, is_error = _result(part)
            if result is None and index != last_message:
                continue
            count = seen.get(part.tool_call_id, 0)
            seen[part.tool_call_id] = count + 1
            call_id = part.tool_call_id if count == 0 else f"{part.tool_call_id}_{count + 1}"
            blocks.append(
                WireCall(
                    call_id,
                    part.tool_name,
                    dict(part.input),
                    result,
                    is_error,
                    part.wire,
                    tombstoned=part.status.compacted_at is not None,
                )
            )
        if not blocks:
            continue  # nothing to send
        role = entry.role
        turns.append(WireTurn("user" if role == "tool" else role, blocks))
    return turns
