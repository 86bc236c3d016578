"""``parse_messages``: the messages of one ``record_messages`` call, read in their format
(see :mod:`mnesis.context.intake`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnesis.context.intake import RECORD_FORMATS, Intake, check_wire, dump_objects, reject
from mnesis.context.intake_anthropic import parse_anthropic
from mnesis.context.intake_openai import parse_openai
from mnesis.context.intake_responses import parse_responses
from mnesis.errors import InvalidArgumentError

__all__ = ["parse_messages"]


def parse_messages(messages: object, format: str) -> Intake:
    """The :class:`Intake` of ``messages`` in ``format`` (see the module)."""
    if format not in RECORD_FORMATS:
        raise InvalidArgumentError(
            f"format must be 'openai', 'anthropic' or 'responses', got {format!r}"
        )
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise InvalidArgumentError(
            f"messages must be a list of {format} messages, got {type(messages).__name__}"
        )
    if not messages:
        raise InvalidArgumentError("messages is empty")
    plain = dump_objects(list(messages))
    for index, message in enumerate(plain):
        if not isinstance(message, dict):
            raise reject(f"messages[{index}]", f"must be a dict, got {type(message).__name__}")
    if format == "openai":
        intake = parse_openai(plain)
    elif format == "anthropic":
        intake = parse_anthropic(plain)
    else:
        intake = parse_responses(plain)
    for index, message in enumerate(intake.messages):
        check_wire(message.parts, f"messages[{index}]")
    return intake
