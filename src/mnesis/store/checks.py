"""Argument checks of the store facade: every rejection is an
:class:`~mnesis.errors.InvalidArgumentError`, raised before any backend code runs.

Text the store keeps exactly (message and part text, tool output) may hold anything;
identifiers and the plain-text columns of a row (model, agent, titles, ...) must be
valid Unicode, and identifiers may not contain NUL bytes, so every backend can store
and look them up the same way. Integers must fit a 64-bit column and numbers be finite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mnesis.errors import InvalidArgumentError
from mnesis.models.limits import INT64_MAX, INT64_MIN
from mnesis.models.message import Message
from mnesis.models.parts import PART_TYPES, ToolPart
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import NewMessage, SearchFilter, SummaryRecord

__all__ = [
    "chain_head_bytes",
    "check_choice",
    "check_count",
    "check_filter",
    "check_id",
    "check_ids",
    "check_instance",
    "check_message_update",
    "check_new_message",
    "check_new_messages",
    "check_number",
    "check_optional_count",
    "check_optional_id",
    "check_optional_timestamp",
    "check_parts",
    "check_plain_text",
    "check_row",
    "check_sequence",
    "check_summary",
    "check_tokens",
    "plain_texts",
]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_plain_text(value: object, name: str, *, optional: bool = False) -> None:
    """A ``str`` that encodes as UTF-8 (no lone surrogates)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(f"{name} is not valid Unicode: {exc.reason}") from None


def check_id(value: object, name: str) -> None:
    """A non-empty identifier: valid Unicode, no NUL bytes."""
    check_plain_text(value, name)
    assert isinstance(value, str)
    if not value:
        raise InvalidArgumentError(f"{name} must not be empty")
    if "\x00" in value:
        raise InvalidArgumentError(f"{name} must not contain NUL bytes: {value!r}")


def check_optional_id(value: object, name: str) -> None:
    """``None`` or an identifier."""
    if value is not None:
        check_id(value, name)


def check_sequence(value: object, name: str) -> Sequence[Any]:
    """A list or tuple (a bare string is not a sequence of items here)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidArgumentError(f"{name} must be a list or tuple, got {type(value).__name__}")
    return value


def check_ids(value: object, name: str) -> None:
    """A list or tuple of identifiers."""
    for index, item in enumerate(check_sequence(value, name)):
        check_id(item, f"{name}[{index}]")


def check_count(value: object, name: str) -> None:
    """An ``int`` >= 0 (a limit, an offset, a token count, a position)."""
    if not _is_int(value):
        raise InvalidArgumentError(f"{name} must be an integer, got {type(value).__name__}")
    assert isinstance(value, int)
    if value < 0:
        raise InvalidArgumentError(f"{name} must be >= 0, got {value}")
    if value > INT64_MAX:
        raise InvalidArgumentError(f"{name} must be at most {INT64_MAX}, got {value}")


def check_optional_count(value: object, name: str) -> None:
    """``None`` or an ``int`` >= 0."""
    if value is not None:
        check_count(value, name)


def check_optional_timestamp(value: object, name: str) -> None:
    """``None`` or Unix milliseconds (an ``int``)."""
    if value is not None and (
        not _is_int(value) or not INT64_MIN <= value <= INT64_MAX  # type: ignore[operator]
    ):
        raise InvalidArgumentError(f"{name} must be Unix milliseconds (a 64-bit integer)")


def check_choice(value: object, name: str, choices: Sequence[object]) -> None:
    """One of ``choices``."""
    if value not in choices:
        raise InvalidArgumentError(f"{name} must be one of {list(choices)}, got {value!r}")


def check_instance(value: object, name: str, kind: type | tuple[type, ...]) -> None:
    """An instance of ``kind``."""
    if not isinstance(value, kind):
        expected = (
            kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        )
        raise InvalidArgumentError(f"{name} must be a {expected}, got {type(value).__name__}")


def check_number(value: object, name: str) -> None:
    """A finite ``int`` or ``float``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"{name} must be a finite number, got {value!r}")
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise InvalidArgumentError(f"{name} must fit a 64-bit number, got {value}")
    if not math.isfinite(value):
        raise InvalidArgumentError(f"{name} must be a finite number, got {value!r}")


def check_row(value: object, name: str, width: int) -> Sequence[object]:
    """A list or tuple of exactly ``width`` fields."""
    row = check_sequence(value, name)
    if len(row) != width:
        raise InvalidArgumentError(f"{name} must have {width} fields, got {len(row)}")
    return row


def check_parts(parts: object, part_tokens: object, name: str) -> None:
    """Message parts (with optional IDs) and their optional token estimates."""
    for index, part in enumerate(check_sequence(parts, name)):
        check_instance(part, f"{name}[{index}]", PART_TYPES)
        check_optional_id(part.id, f"{name}[{index}].id")
        if isinstance(part, ToolPart):
            check_id(part.tool_name, f"{name}[{index}].tool_name")
            check_id(part.tool_call_id, f"{name}[{index}].tool_call_id")
            for field in ("compacted_at", "started_at", "completed_at"):
                check_optional_timestamp(
                    getattr(part.status, field), f"{name}[{index}].status.{field}"
                )
    if part_tokens is not None:
        for index, tokens in enumerate(check_sequence(part_tokens, "part_tokens")):
            check_count(tokens, f"part_tokens[{index}]")


def check_new_message(item: object, name: str) -> None:
    """A :class:`NewMessage`: the message row's identifiers and columns, and its parts."""
    check_instance(item, name, NewMessage)
    assert isinstance(item, NewMessage)
    message = item.message
    check_instance(message, f"{name}.message", Message)
    check_id(message.id, f"{name} message id")
    check_id(message.session_id, f"{name} session id")
    check_optional_id(message.parent_id, f"{name} parent_id")
    check_plain_text(message.agent, f"{name} agent")
    for field in ("model_id", "provider_id", "finish_reason"):
        check_plain_text(getattr(message, field), f"{name} {field}", optional=True)
    check_count(message.token_estimate, f"{name} token_estimate")
    check_optional_timestamp(message.created_at, f"{name} created_at")
    check_number(message.cost, f"{name} cost")
    if message.tokens is not None:
        check_tokens(message.tokens, f"{name} tokens")
    check_parts(item.parts, item.part_tokens, f"{name} parts")


def check_new_messages(batch: object, name: str = "batch") -> Sequence[NewMessage]:
    """A batch of :class:`NewMessage`: the same rejections as :func:`check_new_message`
    on each item, but a batch of well-formed plain values costs one pass over it and one
    UTF-8 encoding of all its identifiers and plain-text fields."""
    items = check_sequence(batch, name)
    if not _plainly_valid(items):
        for index, item in enumerate(items):
            check_new_message(item, f"{name}[{index}]")
    return items


def _fits(value: object, low: int) -> bool:
    return type(value) is int and low <= value <= INT64_MAX


def _plainly_valid(items: Sequence[object]) -> bool:
    """True when every item is, plainly, what :func:`check_new_message` accepts (exact
    types, no token usage); False sends the batch through the item-by-item checks, which
    name the first offending field."""
    texts: list[str] = []
    for item in items:
        if type(item) is not NewMessage:
            return False
        m = item.message
        if type(m) is not Message or m.tokens is not None:
            return False
        mid, sid, agent = m.id, m.session_id, m.agent
        if type(mid) is not str or type(sid) is not str or type(agent) is not str:
            return False
        if not (mid and sid):
            return False
        texts += (mid, sid, agent)
        for value in (m.parent_id, m.model_id, m.provider_id, m.finish_reason):
            if value is not None:
                if type(value) is not str:
                    return False
                texts.append(value)
        if m.parent_id == "":
            return False
        if not _fits(m.token_estimate, 0) or not (
            m.created_at is None or _fits(m.created_at, INT64_MIN)
        ):
            return False
        cost = m.cost
        if not (_fits(cost, INT64_MIN) or (type(cost) is float and math.isfinite(cost))):
            return False
        if not _plain_parts(item, texts):
            return False
    return plain_texts(texts)


def plain_texts(texts: list[str]) -> bool:
    """True when no text holds a NUL or a lone surrogate (one join, one UTF-8 encoding:
    the identifiers and plain-text fields of a batch, checked at once)."""
    joined = "\x1f".join(texts)
    if "\x00" in joined:
        return False
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _plain_parts(item: NewMessage, texts: list[str]) -> bool:
    """:func:`_plainly_valid` for the parts and part token estimates of one item."""
    parts, tokens = item.parts, item.part_tokens
    if type(parts) not in (list, tuple) or not (tokens is None or type(tokens) in (list, tuple)):
        return False
    for part in parts:
        if type(part) not in PART_TYPES or not (part.id is None or (type(part.id) is str)):
            return False
        if part.id is not None:
            texts.append(part.id)
            if not part.id:
                return False
        if type(part) is ToolPart:
            name, call, status = part.tool_name, part.tool_call_id, part.status
            if not (type(name) is str and name and type(call) is str and call):
                return False
            stamps = (status.compacted_at, status.started_at, status.completed_at)
            if not all(v is None or _fits(v, INT64_MIN) for v in stamps):
                return False
            texts += (name, call)
    if tokens is not None:
        for t in tokens:
            if not _fits(t, 0):
                return False
    return True


def check_message_update(
    tokens: object, cost: object, finish_reason: object, token_estimate: object
) -> None:
    """The values of the one permitted mutation of a message row."""
    if tokens is not None:
        check_tokens(tokens, "tokens")
    if cost is not None:
        check_number(cost, "cost")
    check_plain_text(finish_reason, "finish_reason", optional=True)
    check_optional_count(token_estimate, "token_estimate")


def check_tokens(tokens: object, name: str) -> None:
    """A :class:`TokenUsage` whose counters fit a 64-bit column."""
    check_instance(tokens, name, TokenUsage)
    for field in ("input", "output", "cache_read", "cache_write", "total"):
        check_count(getattr(tokens, field), f"{name}.{field}")


def check_summary(summary: object) -> None:
    """A summary row to write."""
    check_instance(summary, "summary", SummaryRecord)
    assert isinstance(summary, SummaryRecord)
    check_id(summary.id, "summary id")
    check_id(summary.session_id, "summary session id")
    check_choice(summary.kind, "summary kind", ("leaf", "condensed"))
    check_count(summary.depth, "summary depth")
    check_count(summary.token_count, "summary token_count")
    check_instance(summary.content, "summary content", str)
    check_ids(summary.file_ids, "summary file_ids")
    check_optional_id(summary.span_start_message_id, "span_start_message_id")
    check_optional_id(summary.span_end_message_id, "span_end_message_id")


def check_filter(where: object) -> None:
    """The restrictions of a search or scan."""
    check_instance(where, "where", SearchFilter)
    assert isinstance(where, SearchFilter)
    if where.session_ids is not None:
        check_ids(where.session_ids, "session_ids")
    check_optional_timestamp(where.since, "since")
    check_optional_timestamp(where.until, "until")
    check_optional_id(where.under_summary, "under_summary")


def chain_head_bytes(value: object) -> bytes:
    """A chain head given as text (64 hex digits, as ``mnesis verify`` prints it) as
    bytes (32 bytes pass as they are); raises :class:`InvalidArgumentError` for anything
    else."""
    if isinstance(value, bytes) and len(value) == 32:
        return value
    text = value.strip().lower() if isinstance(value, str) else ""
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise InvalidArgumentError(
            f"expected chain head must be 64 hex digits (as `mnesis verify` prints it), "
            f"got {value!r:.80}"
        )
    return bytes.fromhex(text)
