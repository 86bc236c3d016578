"""The models an import builds for every line, without pydantic's validation where a
few type checks show that validation would accept the values unchanged.

Validating a :class:`~mnesis.models.message.Message` costs ~3.5 µs, a text part ~1.7 µs,
a tool part with its status ~4.5 µs (``model_construct`` is slower still): a large share
of a transcript import's parsing. Each builder here checks its values for exactly the
types and ranges the model's validation accepts without converting anything, and then
fills the model's fields directly (the field defaults are immutable values, shared as
pydantic shares them); any other value goes through the validating constructor, so bad
input raises the same ``ValidationError`` as before.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from mnesis.models.limits import INT64_MAX, INT64_MIN
from mnesis.models.message import Message, Role
from mnesis.models.parts import ReasoningPart, TextPart, ToolPart, ToolStatus

__all__ = ["message", "reasoning_part", "restored", "text_part", "tool_call_part"]

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__
_ROLES = frozenset(("system", "user", "assistant", "tool"))


def restored(cls: type[M], data: dict[str, Any], fields_set: set[str]) -> M:
    """A ``cls`` holding ``data`` (every field, in the model's field order) as its
    validated fields, ``fields_set`` as the ones given explicitly; nothing is checked."""
    model = cls.__new__(cls)
    _set(model, "__dict__", data)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


def _defaults(cls: type[BaseModel]) -> dict[str, Any]:
    """Each field's default, in field order (None for required fields and factories:
    the builders always give those)."""
    return {
        name: None if field.is_required() or field.default_factory else field.default
        for name, field in cls.model_fields.items()
    }


_TEXT, _REASONING = _defaults(TextPart), _defaults(ReasoningPart)
_TOOL, _STATUS, _MESSAGE = _defaults(ToolPart), _defaults(ToolStatus), _defaults(Message)


def _int64(value: object) -> bool:
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def text_part(text: object) -> TextPart:
    """``TextPart(text=text)``."""
    if type(text) is not str:
        return TextPart(text=text)
    return restored(TextPart, {**_TEXT, "text": text}, {"text"})


def reasoning_part(text: object) -> ReasoningPart:
    """``ReasoningPart(text=text)``."""
    if type(text) is not str:
        return ReasoningPart(text=text)
    return restored(ReasoningPart, {**_REASONING, "text": text}, {"text"})


def tool_call_part(name: str, call_id: str, arguments: dict[str, Any], at: int) -> ToolPart:
    """``ToolPart(tool_name=name, tool_call_id=call_id, input=arguments,
    status=ToolStatus(state="running", started_at=at))``."""
    if not (
        type(name) is str
        and name
        and type(call_id) is str
        and call_id
        and type(arguments) is dict
        and all(type(key) is str for key in arguments)
        and _int64(at)
    ):
        return ToolPart(
            tool_name=name,
            tool_call_id=call_id,
            input=arguments,
            status=ToolStatus(state="running", started_at=at),
        )
    status = restored(
        ToolStatus, {**_STATUS, "state": "running", "started_at": at}, {"state", "started_at"}
    )
    given = {"tool_name": name, "tool_call_id": call_id, "input": arguments, "status": status}
    return restored(ToolPart, {**_TOOL, **given}, set(given))


def message(
    message_id: str,
    session_id: str,
    role: Role,
    created_at: int,
    model_id: str | None,
    finish_reason: str | None,
) -> Message:
    """``Message(id=…, session_id=…, role=…, created_at=…, model_id=…,
    finish_reason=…)``."""
    given = {
        "id": message_id,
        "session_id": session_id,
        "role": role,
        "created_at": created_at,
        "model_id": model_id,
        "finish_reason": finish_reason,
    }
    if not (
        type(message_id) is str
        and type(session_id) is str
        and type(role) is str
        and role in _ROLES
        and _int64(created_at)
        and (model_id is None or type(model_id) is str)
        and (finish_reason is None or type(finish_reason) is str)
    ):
        return Message(
            id=message_id,
            session_id=session_id,
            role=role,
            created_at=created_at,
            model_id=model_id,
            finish_reason=finish_reason,
        )
    return restored(Message, {**_MESSAGE, **given}, set(given))
