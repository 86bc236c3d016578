"""The messages of a large import as plain data, turned into rows without part or
message models.

In the parser process that builds the rows (:mod:`mnesis.importers.parse_child`), a
:class:`~mnesis.importers.batches.BatchBuilder` made with ``light=True`` keeps each
message as a :class:`LightMessage` and its parts as :class:`~mnesis.importers.records.Text`
and :class:`LightTool` (a tool call with its result), not as the pydantic
:class:`~mnesis.models.message.Message` and parts. :func:`light_prepared` then encodes
them to the ``(part_id, token_estimate, columns)`` rows the store's own
:func:`~mnesis.store.shared.rows.encode_parts` gives, and the store's
:class:`~mnesis.store.shared.batch.RowPreparer` builds the insert rows from them.

Every check of the model path is kept: the builder builds a model wherever its
validation would fail (so the same error is raised at the same line), and a batch that
the store's batch check would not plainly accept (see
:func:`~mnesis.store.checks.check_new_messages`) is turned into models by
:func:`new_messages` and goes the model path, which accepts it or raises as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from mnesis.importers.records import Text
from mnesis.models.ids import new_id
from mnesis.models.limits import INT64_MAX, fits_int64
from mnesis.models.message import Message
from mnesis.models.parts import (
    MessagePart,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolState,
    ToolStatus,
)
from mnesis.store.base import NewMessage
from mnesis.store.checks import plain_texts
from mnesis.store.codec import indexed_text, part_columns, tool_search_text
from mnesis.store.shared.part_text import shrink_content
from mnesis.store.shared.rows import EncodedParts

__all__ = [
    "BuiltPart",
    "LightItem",
    "LightMessage",
    "LightPart",
    "LightTool",
    "light_prepared",
    "new_messages",
    "part_model",
    "trusted_model",
]


_Model = TypeVar("_Model", bound=BaseModel)


@dataclass(slots=True)
class LightTool:
    """A tool call, and its result once it arrived: the fields of a
    :class:`~mnesis.models.parts.ToolPart` an import sets."""

    tool_name: str
    tool_call_id: str
    input: dict[str, Any]
    started_at: int
    output: str | None = None
    error_message: str | None = None
    state: ToolState = "running"
    completed_at: int | None = None

    def to_model(self) -> ToolPart:
        """The part the model path builds (its result set as that path sets it: by
        assignment, unchecked until the store's batch check)."""
        part = ToolPart(
            tool_name=self.tool_name,
            tool_call_id=self.tool_call_id,
            input=self.input,
            status=ToolStatus(state="running", started_at=self.started_at),
        )
        if self.state != "running":
            part.output = self.output
            part.status.state = self.state
            part.status.completed_at = self.completed_at
            if self.error_message is not None:
                part.error_message = self.error_message
        return part


LightPart = Text | LightTool
"""A part of a :class:`LightMessage`."""
BuiltPart = MessagePart | LightPart
"""A part as a builder holds it (models only in the model path; light parts, or a
model where the light path gave way to the model path's error)."""


@dataclass(slots=True)
class LightMessage:
    """The fields of a :class:`~mnesis.models.message.Message` an import sets."""

    id: str
    session_id: str
    role: str
    created_at: int
    """Unix milliseconds (in the 64-bit range: the builder checks it)."""
    model_id: str | None = None
    finish_reason: str | None = None
    token_estimate: int = 0
    """Set when the batch is cut (the parts' estimates and the message overhead)."""

    def _values(self) -> dict[str, Any]:
        """The fields the model path's constructor is given."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "role": self.role,
            "created_at": self.created_at,
            "model_id": self.model_id,
            "finish_reason": self.finish_reason,
        }

    def to_model(self) -> Message:
        """The message the model path builds (its token estimate set by assignment)."""
        message = Message(**self._values())
        message.token_estimate = self.token_estimate
        return message

    def trusted(self) -> Message:
        """The same message built without validation, for values :func:`light_prepared`
        checked (a validating constructor costs a few microseconds)."""
        data = {**_MESSAGE_DEFAULTS, **self._values(), "token_estimate": self.token_estimate}
        return trusted_model(Message, data, set())  # only the rows read it: none "set"


_MESSAGE_DEFAULTS = {name: info.default for name, info in Message.model_fields.items()}
"""Every field of a message in order, with its default (the given fields keep their
places when they replace them)."""


def trusted_model(
    cls: type[_Model], data: dict[str, Any], fields_set: set[str] | None = None
) -> _Model:
    """A ``cls`` holding ``data`` (every field, in the model's order), built as pickle
    restores one: without validation, for values already checked. ``fields_set``: the
    fields counted as set (default: all; building that set costs ~1 µs a message in a
    batch)."""
    model = cls.__new__(cls)
    _set(model, "__dict__", data)
    _set(model, "__pydantic_fields_set__", set(data) if fields_set is None else fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


_set = object.__setattr__

LightItem = tuple[LightMessage, list[BuiltPart], list[int]]
"""A message of a batch, its parts and their token estimates."""


def part_model(part: BuiltPart) -> MessagePart:
    """The model of ``part``, as the model path builds it (a model: itself)."""
    if isinstance(part, LightTool):
        return part.to_model()
    if isinstance(part, Text):
        return ReasoningPart(text=part.text) if part.reasoning else TextPart(text=part.text)
    return part


def new_messages(items: list[LightItem]) -> list[NewMessage]:
    """``items`` as the model path's messages."""
    return [
        NewMessage(message.to_model(), [part_model(p) for p in parts], tokens)
        for message, parts, tokens in items
    ]


def _plainly_valid(items: list[LightItem]) -> bool:
    """Whether the store's batch check plainly accepts the models of ``items`` (the
    conditions of its fast pass; the builder already made sure the models build)."""
    texts: list[str] = []
    for message, parts, tokens in items:
        if type(message) is not LightMessage or type(message.session_id) is not str:
            return False
        if not (message.id and message.session_id) or not fits_int64(message.token_estimate):
            return False
        texts += (message.id, message.session_id)
        if message.model_id is not None:
            texts.append(message.model_id)
        if message.finish_reason is not None:
            texts.append(message.finish_reason)
        for part in parts:
            if type(part) is LightTool:
                done = part.completed_at
                if not (fits_int64(part.started_at) and (done is None or fits_int64(done))):
                    return False
                if not (part.tool_name and part.tool_call_id):
                    return False
                texts += (part.tool_name, part.tool_call_id)
            elif type(part) is not Text:
                return False
        if any(t > INT64_MAX for t in tokens):
            return False
    return plain_texts(texts)


_TEXT_KINDS = ("text", "reasoning")


def _encoded(part: BuiltPart, tokens: int) -> tuple[str, int, dict[str, Any]]:
    """``(part_id, token_estimate, columns)`` as ``encode_parts`` gives them for the
    part's model."""
    if type(part) is Text:
        kind = _TEXT_KINDS[part.reasoning]
        text = part.text
        indexed = indexed_text(text)
        if text and indexed == text:  # the minimal JSON of a plain text part
            content = "{}"
        elif part.reasoning:
            content = shrink_content({"type": kind, "text": text}, indexed)
        else:
            data = {"type": kind, "text": text, "synthetic": False, "ignored": False}
            content = shrink_content(data, indexed)
        columns = part_columns(kind, content, indexed)
        columns["search_context"] = None
        return new_id("part"), tokens, columns
    assert isinstance(part, LightTool)
    indexed = tool_search_text(part.tool_name, part.input, part.output, part.error_message)
    data = {
        "type": "tool",
        "tool_name": part.tool_name,
        "tool_call_id": part.tool_call_id,
        "input": part.input,
        "output": part.output,
        "error_message": part.error_message,
        "title": None,
        "status": {
            "state": part.state,
            "compacted_at": None,
            "started_at": part.started_at,
            "completed_at": part.completed_at,
        },
    }
    columns = part_columns("tool", shrink_content(data, indexed), indexed)
    columns["tool_name"], columns["tool_call_id"] = part.tool_name, part.tool_call_id
    columns["tool_state"], columns["search_context"] = part.state, None
    columns["started_at"], columns["completed_at"] = part.started_at, part.completed_at
    return new_id("part"), tokens, columns


def light_prepared(
    items: list[LightItem],
) -> tuple[list[tuple[NewMessage, EncodedParts]], list[tuple[str, str, str]]] | None:
    """The messages of ``items`` with their encoded parts (as
    :func:`~mnesis.store.shared.batch.encode_batch` gives them, the messages without
    their part models, which the rows do not need), and ``(call ID, part ID, message
    ID)`` of each tool call still running; None when the store's batch check would not
    plainly accept them (then :func:`new_messages` and the model path)."""
    if not _plainly_valid(items):
        return None
    prepared: list[tuple[NewMessage, EncodedParts]] = []
    calls: list[tuple[str, str, str]] = []
    for message, parts, tokens in items:
        rows = []
        for part, estimate in zip(parts, tokens, strict=True):
            row = _encoded(part, estimate)
            rows.append(row)
            if type(part) is LightTool and part.state == "running":
                calls.append((part.tool_call_id, row[0], message.id))
        prepared.append((NewMessage(message.trusted(), (), tokens), rows))
    return prepared, calls
