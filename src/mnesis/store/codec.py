"""Row encoding shared by the store backends.

A part is stored as its JSON (without ``id``) plus a few columns the database
queries on (type, tool name/call/state, tombstone, searchable text). Decoding
goes through one module-level ``TypeAdapter``: no per-row schema building. A stored
value that no longer decodes (a damaged file) raises
:class:`~mnesis.errors.StoreCorruptError` naming the table and row.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from mnesis.errors import StoreCorruptError
from mnesis.models.limits import INT64_MAX
from mnesis.models.message import Message, Role
from mnesis.models.parts import (
    FileRefPart,
    MessagePart,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStatus,
    part_adapter,
)
from mnesis.models.tokens import TokenUsage
from mnesis.store.plain_json import plain_json
from mnesis.store.search_text import index_text

__all__ = [
    "decode_part",
    "dumps",
    "encode_part",
    "indexed_text",
    "loads_column",
    "make_message",
    "part_columns",
    "part_from_data",
    "pre_encoded",
    "searchable_text",
    "tool_search_text",
    "usage_from_sums",
]


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def dumps(obj: Any) -> str:
    """JSON that SQLite/PostgreSQL can store: lone surrogates are \\u-escaped. (One
    encoder per module: ``json.dumps`` with options builds a new one per call.)"""
    text = plain_json(obj)
    if text is not None:
        return text
    text = _ENCODER.encode(obj)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _ASCII_ENCODER.encode(obj)
    return text


def loads_column(text: object, table: str, row_id: object, column: str) -> Any:
    """The JSON value of a stored column; a value that does not decode is corruption."""
    try:
        if not isinstance(text, str | bytes | bytearray):
            raise TypeError(f"expected JSON text, found {type(text).__name__}")
        return json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:
        raise StoreCorruptError(
            f"{table} row {row_id!r}: column {column} does not decode ({exc}); "
            "run `mnesis check --deep` and restore this database from a backup"
        ) from None


def indexed_text(text: str) -> str:
    """Text safe for an index: lone surrogates become U+FFFD, NUL a space, CJK bigrams
    added (the very object when it is plain ASCII)."""
    if text.isascii() and "\x00" not in text:
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return index_text(text.replace("\x00", " "))


def tool_search_text(
    tool_name: str, tool_input: Any, output: str | None, error_message: str | None
) -> str:
    """The indexed text of a tool part with these fields (see :func:`searchable_text`)."""
    pieces = [tool_name, dumps(tool_input)]
    if output:
        pieces.append(output)
    if error_message:
        pieces.append(error_message)
    return indexed_text("\n".join(pieces))


def searchable_text(part: MessagePart) -> str | None:
    """The text the full-text index holds for a part (None: not indexed)."""
    if isinstance(part, TextPart | ReasoningPart):
        return indexed_text(part.text)
    if isinstance(part, ToolPart):
        return tool_search_text(part.tool_name, part.input, part.output, part.error_message)
    if isinstance(part, FileRefPart):
        return indexed_text(f"{part.path}\n{part.exploration_summary}")
    return None


_PRE_ENCODED: ContextVar[dict[int, tuple[MessagePart, dict[str, Any]]] | None] = ContextVar(
    "mnesis_pre_encoded", default=None
)


@contextlib.contextmanager
def pre_encoded(encodings: Iterable[tuple[MessagePart, dict[str, Any]]]) -> Iterator[None]:
    """Within the block (in this thread or task), :func:`encode_part` gives the listed
    part objects the columns listed with them instead of encoding them again.

    For columns that the store's own encoding (``encode_parts`` of the append path)
    computed for these very objects elsewhere (a transcript import encodes in its parser
    process); the objects must not change in between.
    """
    table = {id(part): (part, columns) for part, columns in encodings}
    token = _PRE_ENCODED.set(table or None)
    try:
        yield
    finally:
        _PRE_ENCODED.reset(token)


def _fields(model: type[BaseModel]) -> tuple[str, ...]:
    return tuple(name for name in model.model_fields if name != "id")


_DIRECT_FIELDS: dict[type[MessagePart], tuple[str, ...]] = {
    kind: _fields(kind) for kind in (TextPart, ReasoningPart, ToolPart)
}
_STATUS_FIELDS = _fields(ToolStatus)


def _part_data(part: MessagePart) -> dict[str, Any]:
    """``part.model_dump(exclude={"id"})``, read straight from the fields for the parts a
    transcript is made of (a dump costs a few microseconds a part). Same keys in the same
    order (the models' own field lists); ``input`` is not copied: the caller only encodes
    it (and :func:`searchable_text` has encoded it already, so it is plain JSON)."""
    fields = _DIRECT_FIELDS.get(type(part))
    if fields is None:
        return part.model_dump(exclude={"id"})
    data = {name: getattr(part, name) for name in fields}
    if isinstance(part, ToolPart):
        status = part.status
        if type(status) is not ToolStatus:
            return part.model_dump(exclude={"id"})
        data["status"] = {name: getattr(status, name) for name in _STATUS_FIELDS}
    return data


def part_columns(part_type: str, content: str, text_content: str | None) -> dict[str, Any]:
    """The columns :func:`encode_part` gives a part, its tool columns None."""
    return {
        "part_type": part_type,
        "content": content,
        "text_content": text_content,
        "tool_name": None,
        "tool_call_id": None,
        "tool_state": None,
        "compacted_at": None,
        "started_at": None,
        "completed_at": None,
    }


def encode_part(
    part: MessagePart, content: Callable[[dict[str, Any], str | None], str] | None = None
) -> dict[str, Any]:
    """Columns of a ``message_parts`` row (without ids, ordinals and timestamps);
    ``content(data, text_content)`` makes the ``content`` JSON (default: all of it)."""
    table = _PRE_ENCODED.get()
    if table is not None:
        found = table.get(id(part))
        if found is not None and found[0] is part:
            return dict(found[1])
    text = searchable_text(part)
    data = _part_data(part)
    row = part_columns(part.type, dumps(data) if content is None else content(data, text), text)
    if isinstance(part, ToolPart):
        row.update(
            tool_name=part.tool_name,
            tool_call_id=part.tool_call_id,
            tool_state=part.status.state,
            compacted_at=part.status.compacted_at,
            started_at=part.status.started_at,
            completed_at=part.status.completed_at,
        )
    return row


def decode_part(
    part_id: str,
    content: str,
    tool_state: str | None,
    compacted_at: int | None,
    started_at: int | None,
    completed_at: int | None,
) -> MessagePart:
    """Rebuild a part; the status columns are authoritative over the JSON."""
    data = loads_column(content, "message_parts", part_id, "content")
    return part_from_data(part_id, data, tool_state, compacted_at, started_at, completed_at)


def part_from_data(
    part_id: str,
    data: Any,
    tool_state: str | None,
    compacted_at: int | None,
    started_at: int | None,
    completed_at: int | None,
) -> MessagePart:
    """:func:`decode_part` after the JSON was parsed (``data``)."""
    try:
        part = part_adapter.validate_python(data)
    except ValidationError as exc:
        raise StoreCorruptError(
            f"message_parts row {part_id!r}: column content is not a message part "
            f"({exc.errors()[0]['msg']}); run `mnesis check --deep` and restore this "
            "database from a backup"
        ) from None
    part.id = part_id
    if isinstance(part, ToolPart):
        status = part.status
        if tool_state is not None:
            status.state = tool_state  # type: ignore[assignment]
        status.compacted_at = compacted_at
        status.started_at = started_at
        status.completed_at = completed_at
    return part


def usage_from_sums(row: Sequence[Any]) -> TokenUsage:
    """A session's token usage from the five column sums (input, output, cache_read,
    cache_write, total), each clamped to the 64-bit range so a session stays loadable."""
    input_, output, cache_read, cache_write, total = (
        min(int(value or 0), INT64_MAX) for value in row
    )
    return TokenUsage(
        input=input_, output=output, cache_read=cache_read, cache_write=cache_write, total=total
    )


def make_message(
    *,
    id: str,
    session_id: str,
    role: str,
    created_at: int,
    agent: str,
    model_id: str | None,
    provider_id: str | None,
    is_summary: Any,
    parent_id: str | None,
    tokens_input: int,
    tokens_output: int,
    tokens_cache_read: int,
    tokens_cache_write: int,
    tokens_total: int,
    cost: float,
    finish_reason: str | None,
    token_estimate: int,
) -> Message:
    """Build a :class:`Message` from trusted row values without re-validation."""
    has_tokens = tokens_input or tokens_output or tokens_cache_read or tokens_cache_write
    tokens = (
        TokenUsage.model_construct(
            input=tokens_input,
            output=tokens_output,
            cache_read=tokens_cache_read,
            cache_write=tokens_cache_write,
            total=tokens_total,
        )
        if has_tokens or tokens_total
        else None
    )
    return Message.model_construct(
        id=id,
        session_id=session_id,
        role=cast(Role, role),
        created_at=created_at,
        agent=agent,
        model_id=model_id,
        provider_id=provider_id,
        is_summary=bool(is_summary),
        parent_id=parent_id,
        tokens=tokens,
        cost=cost,
        finish_reason=finish_reason,
        token_estimate=token_estimate,
    )
