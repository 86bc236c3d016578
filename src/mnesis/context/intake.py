"""Provider messages into stored rounds: the types and helpers of the three readers.

:func:`mnesis.context.recording.parse_messages` reads the messages a loop exchanged with
a provider, in that provider's own shape (``"openai"`` chat, ``"anthropic"`` Messages,
``"responses"`` items), and returns an :class:`Intake`: the user and assistant messages
to store, in order (one assistant message per round, as ``send`` stores them), with
every tool result put on its call's :class:`~mnesis.models.parts.ToolPart`, and the
results of calls recorded by an earlier call (a continuation of the open turn).

Every field the renderers do not rebuild on their own is kept in the parts' ``wire``
(per format: ``message``: the message's other keys, on its first part; ``block``: a
block's or item's other keys; ``result``: the result's other keys; ``content``: the
shape of the content, ``"str"`` or ``"list"``; ``arguments``: the recorded arguments
string when it is not what ``json.dumps`` writes), so that the context renders back, in
the same format, exactly what was recorded. ``cache_control`` is not kept: the renderer
places its own breakpoints.

Everything is checked here, before anything is written: a message this module cannot
store faithfully raises :class:`~mnesis.errors.InvalidArgumentError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mnesis.errors import InvalidArgumentError
from mnesis.models.clock import now_ms
from mnesis.models.limits import MAX_JSON_DEPTH, json_depth_exceeds
from mnesis.models.parts import MessagePart, ToolPart, ToolStatus, WireFields

__all__ = [
    "RECORD_FORMATS",
    "Intake",
    "IntakeMessage",
    "IntakeResult",
    "Pairing",
    "canonical_arguments",
    "check_wire",
    "dump_objects",
    "put_wire",
    "reject",
]

RECORD_FORMATS: tuple[str, ...] = ("openai", "anthropic", "responses")
"""The formats ``record_messages`` reads."""


@dataclass(slots=True)
class IntakeMessage:
    """A message to store: a user message (a new turn) or one assistant round."""

    role: Literal["user", "assistant"]
    parts: list[MessagePart]


@dataclass(slots=True)
class IntakeResult:
    """The result of a call that an earlier call recorded (a continuation)."""

    call_id: str
    output: str | None
    error: str | None
    wire: WireFields | None = None
    where: str = ""


@dataclass(slots=True)
class Intake:
    """What one ``record_messages`` call stores, in order."""

    messages: list[IntakeMessage] = field(default_factory=list)
    earlier_results: list[IntakeResult] = field(default_factory=list)
    joins_round: bool = False
    """The first message continues the open round (Responses items: assistant-side items
    that came before any output of this call belong to the round stored last, if no
    result has arrived for it since)."""


def reject(where: str, problem: str) -> InvalidArgumentError:
    """The error for a message that cannot be recorded."""
    return InvalidArgumentError(f"{where}: {problem}")


def put_wire(wire: WireFields, format: str, key: str, value: Any) -> None:
    """Set ``wire[format][key]``."""
    wire.setdefault(format, {})[key] = value


def canonical_arguments(raw: object, where: str) -> tuple[dict[str, Any], str | None]:
    """The arguments as a dict, and the raw string to keep when the renderer's own JSON
    would differ from it (invalid JSON or a non-object is kept as the string, with ``{}``)."""
    if isinstance(raw, Mapping):
        return dict(raw), None
    if not isinstance(raw, str):
        raise reject(where, f"arguments must be a JSON string, got {type(raw).__name__}")
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        value = None
    if isinstance(value, dict):
        same = json.dumps(value, ensure_ascii=False) == raw
        return value, None if same else raw
    return {}, raw


def dump_objects(value: object, depth: int = 0) -> Any:
    """``value`` with SDK objects (pydantic models: ``model_dump(exclude_none=True)``)
    turned into plain dicts, at any depth."""
    if depth > MAX_JSON_DEPTH:
        raise InvalidArgumentError(f"a message nests deeper than {MAX_JSON_DEPTH} levels")
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        value = dump(exclude_none=True)
    if isinstance(value, Mapping):
        return {k: dump_objects(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [dump_objects(v, depth + 1) for v in value]
    return value


class Pairing:
    """Tool calls of the batch by ID, so each result lands on its call."""

    def __init__(self, format: str) -> None:
        self.format = format
        self.calls: dict[str, ToolPart] = {}
        self.answered: set[str] = set()
        self.earlier: list[IntakeResult] = []

    def call(self, part: ToolPart, where: str) -> ToolPart:
        """Register a call of the batch (pending until its result comes)."""
        if part.tool_call_id in self.calls:
            raise reject(where, f"duplicate tool call id {part.tool_call_id!r}")
        part.status = ToolStatus(state="pending", started_at=now_ms())
        self.calls[part.tool_call_id] = part
        return part

    def json_call(
        self, name: str, call_id: str, arguments: object, extra: dict[str, Any], where: str
    ) -> ToolPart:
        """Register a call whose arguments come as a JSON string (OpenAI chat, Responses),
        keeping that string when the renderer would not write it back the same, and the
        call's other keys (``extra``) as its ``block``."""
        parsed, raw = canonical_arguments(arguments, where)
        wire: WireFields = {}
        if raw is not None:
            put_wire(wire, self.format, "arguments", raw)
        if extra:
            put_wire(wire, self.format, "block", extra)
        part = ToolPart(tool_name=name, tool_call_id=call_id, input=parsed, wire=wire or None)
        return self.call(part, where)

    def result(
        self,
        call_id: object,
        output: str,
        is_error: bool,
        extra: dict[str, Any],
        where: str,
    ) -> None:
        """Put a result on its call (one of the batch's, or an earlier one)."""
        if not isinstance(call_id, str) or not call_id:
            raise reject(where, "a tool result without its call id")
        if call_id in self.answered:
            raise reject(where, f"a second result for tool call {call_id!r}")
        self.answered.add(call_id)
        part = self.calls.get(call_id)
        wire: WireFields = {self.format: {"result": extra}} if extra else {}
        if part is None:
            self.earlier.append(
                IntakeResult(
                    call_id,
                    None if is_error else output,
                    output if is_error else None,
                    wire or None,
                    where,
                )
            )
            return
        part.status = ToolStatus(
            state="error" if is_error else "completed",
            started_at=part.status.started_at,
            completed_at=now_ms(),
        )
        if is_error:
            part.error_message = output
        else:
            part.output = output
        if extra:
            part.wire = {**(part.wire or {})}
            put_wire(part.wire, self.format, "result", extra)


def check_wire(parts: list[MessagePart], where: str) -> None:
    """Kept fields must be storable JSON."""
    for part in parts:
        wire = getattr(part, "wire", None)
        if wire is None:
            continue
        if json_depth_exceeds(wire):
            raise reject(where, f"fields nest deeper than {MAX_JSON_DEPTH} levels")
        try:
            json.dumps(wire, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise reject(where, f"fields that are not JSON: {exc}") from None
