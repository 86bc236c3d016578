"""Validation of what callers hand a session: message content, names and prompts.

Every check raises :class:`~mnesis.errors.InvalidArgumentError` naming the argument,
before anything is stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import ValidationError

from mnesis.errors import InvalidArgumentError
from mnesis.models.parts import PART_TYPES, MessagePart, TextPart, ToolPart, part_adapter

__all__: list[str] = []  # helpers for mnesis.session and mnesis.session_turns only


def _normalize(content: object, what: str) -> list[MessagePart]:
    """Validate user-supplied content into fresh parts (copies, without IDs)."""
    if isinstance(content, str):
        if not content.strip():
            raise InvalidArgumentError(f"{what} is empty")
        return [TextPart(text=content)]
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts: list[MessagePart] = []
        for index, item in enumerate(content):
            try:
                if isinstance(item, PART_TYPES):
                    part = part_adapter.validate_python(item.model_dump())
                elif isinstance(item, dict):
                    part = part_adapter.validate_python(item)
                else:
                    raise InvalidArgumentError(
                        f"{what}[{index}] must be a message part, got {type(item).__name__}"
                    )
            except ValidationError as exc:
                raise InvalidArgumentError(
                    f"{what}[{index}] is not a valid message part: {exc.errors()[0]['msg']}"
                ) from None
            parts.append(part.model_copy(deep=True, update={"id": None}))
        if not parts:
            raise InvalidArgumentError(f"{what} is empty")
        for part in parts:
            if isinstance(part, ToolPart):
                _check_json(part.input, f"{what}: input of tool call {part.tool_call_id!r}")
        return parts
    raise InvalidArgumentError(
        f"{what} must be a str or a list of message parts, got {type(content).__name__}"
    )


def _check_encodable(value: str, what: str) -> None:
    """Reject text that cannot be stored as UTF-8 (lone surrogates) in a plain column."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{what} contains characters that are not valid Unicode text: {exc.reason} "
            f"at position {exc.start}"
        ) from None


def _check_json(value: object, what: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{what} is not JSON-serialisable: {exc}") from None
