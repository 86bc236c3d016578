"""What a transcript parser yields: format-neutral turns, tool results and metadata.

Each importer (``claude_code``, ``codex``, ``openai_chat``, ``generic_jsonl``) turns the
lines of its format into these records; :mod:`mnesis.importers.writer` stores them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "Clock",
    "Meta",
    "ParsedItem",
    "Text",
    "ToolCall",
    "ToolResult",
    "Turn",
    "TurnPart",
    "as_text",
    "is_injected",
    "parse_timestamp",
    "tool_call",
    "tool_input",
]


@dataclass(slots=True)
class ToolCall:
    """A tool call made by the assistant; its result arrives as a :class:`ToolResult`."""

    call_id: str
    name: str
    input: dict[str, Any]


@dataclass(slots=True, frozen=True)
class Text:
    """Text of a turn: what the user or the model wrote, or the model's reasoning. (Plain
    data, not a :class:`~mnesis.models.parts.TextPart`: a parser's text is always a
    ``str``, and the import's parser process builds rows without part models.)"""

    text: str
    reasoning: bool = False


TurnPart = Text | ToolCall
"""What a turn is made of."""


@dataclass(slots=True)
class Turn:
    """One message of the source transcript."""

    role: Literal["system", "user", "assistant", "tool"]
    created_at: int
    parts: list[TurnPart] = field(default_factory=list)
    model: str | None = None
    sidechain: bool = False
    merge_key: str | None = None
    """Consecutive turns with the same key (one API message split over several lines)
    become one stored message."""
    finish_reason: str | None = None
    session_key: str | None = None
    """For formats with several sessions per file: which one (None: the file's)."""
    context: bool = False
    """Text the tool injected (instructions, environment, command echoes, a compaction
    summary), not a request the user typed: stored, never taken for the title."""


@dataclass(slots=True)
class ToolResult:
    """The output of an earlier :class:`ToolCall`, matched by ``call_id``."""

    call_id: str
    output: str
    created_at: int
    is_error: bool = False
    sidechain: bool = False
    session_key: str | None = None


@dataclass(slots=True)
class Meta:
    """Facts about the source session (working directory, model, title, source ID)."""

    cwd: str | None = None
    model: str | None = None
    title: str | None = None
    source_id: str | None = None
    chosen_title: str | None = None
    """A title the user gave the session (it wins over ``title``)."""


ParsedItem = Turn | ToolResult | Meta


def parse_timestamp(value: object, default: int) -> int:
    """ISO-8601 text, Unix seconds or Unix milliseconds → Unix milliseconds."""
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int | float):
        return int(value * 1000) if value < 10**11 else int(value)
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            return default
    return default


class Clock:
    """The time of each line of a file: its own timestamp, or the previous line's when it
    has none."""

    def __init__(self) -> None:
        self.last = 0

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from an earlier import's :meth:`state`."""
        last = state.get("clock")
        if isinstance(last, int) and not isinstance(last, bool):
            self.last = last

    def state(self) -> dict[str, Any]:
        """What a later import of the same file continues from."""
        return {"clock": self.last}

    def at(self, value: object) -> int:
        """:func:`parse_timestamp` of ``value``, defaulting to the previous line's time."""
        self.last = parse_timestamp(value, self.last)
        return self.last


def head_records(path: str, lines: int = 50) -> Iterator[dict[str, Any]]:
    """The JSON objects among the first ``lines`` lines of ``path`` (others skipped)."""
    with open(path, "rb") as handle:
        for _, raw in zip(range(lines), handle, strict=False):
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


class ClockedParser:
    """A line parser whose only state between imports is the :class:`Clock` of its lines."""

    def __init__(self) -> None:
        self._clock = Clock()

    def state(self) -> dict[str, Any]:
        """The time of the last line (a line without one takes it)."""
        return self._clock.state()

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from an earlier import's :meth:`state`."""
        self._clock.restore(state)


def as_text(content: object) -> str:
    """Text of a content value: a string, or a list of blocks with ``text`` fields."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
            elif isinstance(block, dict):
                text = block.get("text")
                if isinstance(text, str):
                    pieces.append(text)
                elif block.get("type") in ("image", "input_image"):
                    pieces.append("[image]")
        return "\n".join(pieces)
    return json.dumps(content, ensure_ascii=False)


_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<skills_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
    "Caveat: The messages below were generated by the user while running local commands",
)
"""How the text that agent tools put in a user turn on their own begins (Codex: the
environment, AGENTS.md and its instructions; Claude Code: slash-command echoes, their
output, caveats and reminders)."""


def is_injected(text: str) -> bool:
    """Whether a user turn's ``text`` is context a tool injected rather than a request
    the user typed (see :data:`_INJECTED_PREFIXES`)."""
    return text.lstrip().startswith(_INJECTED_PREFIXES)


def tool_input(value: object) -> dict[str, Any]:
    """Tool arguments as a dict (JSON text is decoded; anything else is wrapped)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return {"arguments": value}
        return decoded if isinstance(decoded, dict) else {"arguments": decoded}
    return {} if value is None else {"arguments": value}


def tool_call(
    call_id: object, name: object, arguments: object, *, default_name: str = "unknown"
) -> ToolCall:
    """A :class:`ToolCall` from a line's raw values: a missing ID is ``""``, a missing name
    ``default_name``, the arguments as :func:`tool_input` gives them."""
    return ToolCall(str(call_id or ""), str(name or default_name), tool_input(arguments))
