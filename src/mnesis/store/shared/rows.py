"""Row tuples to records and records to row tuples, the same on both backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.errors import InvalidArgumentError
from mnesis.models.ids import new_id
from mnesis.models.message import Message, MessageWithParts
from mnesis.models.parts import MessagePart, ToolPart, ToolState
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import SessionRecord, SummaryRecord
from mnesis.store.codec import (
    encode_part,
    loads_column,
    make_message,
    searchable_text,
)
from mnesis.store.shared.part_text import decode_stored_part, shrink_content
from mnesis.store.shared.sql import MESSAGE_COLUMNS

__all__ = [
    "TOOL_STATUS_UPDATE",
    "EncodedParts",
    "attach_parts",
    "encode_parts",
    "message_row",
    "message_update_sets",
    "messages_of",
    "part_rows",
    "session_record",
    "summary_record",
    "tombstone_rows",
    "tool_status_args",
]

EncodedParts = list[tuple[str, int, dict[str, Any]]]
"""``(part_id, token_estimate, columns)`` of each part of one message."""


def session_record(row: Sequence[Any]) -> SessionRecord:
    """A ``sessions`` row (:data:`~mnesis.store.shared.sql.SESSION_COLUMNS`)."""
    config = loads_column(row[9], "sessions", row[0], "config") if row[9] else None
    id_, model, agent, parent_id, system_prompt, title, status, created_at, updated_at = row[:9]
    return SessionRecord(
        id_, model, agent, parent_id, system_prompt, title, status, created_at, updated_at, config
    )


def summary_record(row: Sequence[Any], *, json_text: bool = True) -> SummaryRecord:
    """A ``summaries`` row (:data:`~mnesis.store.shared.sql.SUMMARY_COLUMNS`);
    ``json_text`` when ``file_ids`` is stored as JSON text rather than an array."""
    file_ids = loads_column(row[7], "summaries", row[0], "file_ids") if json_text else list(row[7])
    id_, session_id, kind, depth, level, content, token_count = row[:7]
    message_id, span_start, span_end, source_count, created_at = row[8:13]
    return SummaryRecord(
        id_,
        session_id,
        kind,
        depth,
        level,
        content,
        token_count,
        file_ids,
        message_id,
        span_start,
        span_end,
        source_count,
        created_at,
    )


def messages_of(msg_rows: Sequence[Sequence[Any]]) -> dict[str, MessageWithParts]:
    """The messages of ``msg_rows`` (in that order, without parts yet), by ID."""
    return {
        row[0]: MessageWithParts.model_construct(
            message=make_message(**dict(zip(MESSAGE_COLUMNS, row, strict=True))), parts=[]
        )
        for row in msg_rows
    }


def attach_parts(
    by_id: dict[str, MessageWithParts], part_rows: Sequence[Sequence[Any]]
) -> list[MessageWithParts]:
    """Decode ``part_rows`` (:data:`~mnesis.store.shared.sql.PART_COLUMNS`, by message and
    ordinal) onto their messages; the messages in their original order."""
    for prow in part_rows:
        target = by_id.get(prow[1])
        if target is not None:
            target.parts.append(decode_stored_part(prow[0], prow[8], prow[2], prow[7], *prow[3:7]))
    return list(by_id.values())


def encode_parts(parts: Sequence[MessagePart], estimates: Sequence[int] | None) -> EncodedParts:
    """``(part_id, token_estimate, columns)`` of each part; assigns missing part IDs. The
    ``content`` JSON leaves out the text ``text_content`` holds (see
    :mod:`~mnesis.store.shared.part_text`); ``search_context`` is None until
    :meth:`~mnesis.store.shared.search_context.Contexts.apply` sets it."""
    tokens = list(estimates or [])
    rows: EncodedParts = []
    for index, part in enumerate(parts):
        if part.id is None:
            part.id = new_id("part")
        columns = encode_part(part, shrink_content)
        columns["search_context"] = None
        rows.append((part.id, tokens[index] if index < len(tokens) else 0, columns))
    return rows


_NO_TOKENS = TokenUsage()
"""The counters of a message without token usage (a constant: building one per row
costs more than the rest of the row)."""


def message_row(m: Message, seq: int, is_summary: int | bool) -> tuple[Any, ...]:
    """The values of ``INSERT INTO messages (MESSAGE_COLUMNS, seq)``."""
    t = m.tokens or _NO_TOKENS
    return (
        m.id,
        m.session_id,
        m.role,
        m.created_at,
        m.agent,
        m.model_id,
        m.provider_id,
        is_summary,
        m.parent_id,
        t.input,
        t.output,
        t.cache_read,
        t.cache_write,
        t.effective_total(),
        m.cost,
        m.finish_reason,
        m.token_estimate,
        seq,
    )


def part_rows(
    message_id: str, session_id: str, first_ordinal: int, rows: EncodedParts, now: int
) -> list[tuple[Any, ...]]:
    """The values of :data:`~mnesis.store.shared.sql.PART_INSERT` for encoded parts."""
    return [
        (
            pid,
            message_id,
            session_id,
            first_ordinal + offset,
            r["part_type"],
            r["content"],
            r["text_content"],
            r["tool_name"],
            r["tool_call_id"],
            r["tool_state"],
            r["compacted_at"],
            r["started_at"],
            r["completed_at"],
            est,
            now,
            r["search_context"],
        )
        for offset, (pid, est, r) in enumerate(rows)
    ]


def message_update_sets(
    tokens: TokenUsage | None,
    cost: float | None,
    finish_reason: str | None,
    token_estimate: int | None,
) -> tuple[str, list[Any]] | None:
    """The ``SET`` clause (``?`` placeholders) and its values of the permitted mutation of
    a message row; None when there is nothing to change."""
    sets: list[str] = []
    args: list[Any] = []
    if tokens is not None:
        sets.append(
            "tokens_input = ?, tokens_output = ?, tokens_cache_read = ?, "
            "tokens_cache_write = ?, tokens_total = ?"
        )
        args += [
            tokens.input,
            tokens.output,
            tokens.cache_read,
            tokens.cache_write,
            tokens.effective_total(),
        ]
    if cost is not None:
        sets.append("cost = ?")
        args.append(cost)
    if finish_reason is not None:
        sets.append("finish_reason = ?")
        args.append(str(finish_reason))
    if token_estimate is not None:
        sets.append("token_estimate = ?")
        args.append(token_estimate)
    return (", ".join(sets), args) if sets else None


TOOL_STATUS_UPDATE = (
    "UPDATE message_parts SET tool_state = ?, compacted_at = ?, started_at = ?, "
    "completed_at = ?, content = ?, text_content = COALESCE(?, text_content), "
    "token_estimate = COALESCE(?, token_estimate) WHERE id = ?"
)


def tool_status_args(
    part_id: str,
    row: Sequence[Any],
    *,
    state: ToolState | None,
    compacted_at: int | None,
    output: str | None,
    error_message: str | None,
    started_at: int | None,
    completed_at: int | None,
    token_estimate: int | None,
) -> tuple[Any, ...]:
    """The values of :data:`TOOL_STATUS_UPDATE` for a status change of the tool part whose
    ``content, part_type, tool_state, compacted_at, started_at, completed_at, text_content``
    are ``row``; raises :class:`InvalidArgumentError` for a part that has no status or a
    settled result."""
    content, part_type, old_state, old_compacted, old_started, old_completed = row[:6]
    old_text = row[6]
    if part_type != "tool":
        raise InvalidArgumentError(
            f"part {part_id} is a {part_type!r} part; only tool parts have a status"
        )
    if (output is not None or error_message is not None) and old_state in (
        "completed",
        "error",
    ):
        raise InvalidArgumentError(
            f"tool call of part {part_id} is already {old_state}; its result is history"
        )
    new_state = state or old_state
    new_content = content
    text_content: str | None = None
    if output is not None or error_message is not None or state is not None:
        part = decode_stored_part(
            part_id,
            part_type,
            content,
            old_text,
            old_state,
            old_compacted,
            old_started,
            old_completed,
        )
        assert isinstance(part, ToolPart)
        if output is not None:
            part.output = output
        if error_message is not None:
            part.error_message = error_message
        part.status.state = new_state
        text_content = searchable_text(part)
        new_content = shrink_content(part.model_dump(exclude={"id"}), text_content)
    return (
        new_state,
        compacted_at if compacted_at is not None else old_compacted,
        started_at if started_at is not None else old_started,
        completed_at if completed_at is not None else old_completed,
        new_content,
        text_content if new_content != content else None,
        token_estimate,
        part_id,
    )


def tombstone_rows(
    parts: Sequence[tuple[str, int, int]], message_estimates: Sequence[tuple[str, int]]
) -> list[list[tuple[Any, ...]]]:
    """The parameter rows of each statement of :data:`~mnesis.store.shared.sql.TOMBSTONE`."""
    estimates = [(tokens, message_id) for message_id, tokens in message_estimates]
    return [[(at, tokens, part_id) for part_id, at, tokens in parts], estimates, estimates]
