"""A compaction commit in SQL, written once for both backends: the check that the
replaced context is still in place, then every write of the commit (the marker message
and its parts, the summary row, its lineage rows, its context item); and the reads of
the context the commit changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mnesis.errors import CompactionLockedError
from mnesis.store.records import CompactionCommit
from mnesis.store.search_text import index_text
from mnesis.store.shared.integrity import SOURCE_INSERT
from mnesis.store.shared.rows import EncodedParts, message_row, part_rows
from mnesis.store.shared.search_context import Contexts
from mnesis.store.shared.sql import (
    MESSAGE_INSERT,
    PART_INSERT,
    SUMMARY_COLUMNS,
    select_list,
)
from mnesis.store.shared.statements import Batch

__all__ = [
    "CONTEXT_SUMMARY_INSERT",
    "CONTEXT_TOKEN_TOTAL",
    "COVERING_SUMMARY",
    "PARENT_INSERT",
    "SUMMARY_INSERT",
    "check_replaced",
    "commit_writes",
    "lineage_rows",
    "summary_values",
]

SUMMARY_INSERT = (
    f"INSERT INTO summaries ({select_list(SUMMARY_COLUMNS)}, search_text) VALUES "
    f"({', '.join('?' * (len(SUMMARY_COLUMNS) + 1))})"
)
PARENT_INSERT = (
    "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)"
)
CONTEXT_SUMMARY_INSERT = (
    "INSERT INTO context_items (session_id, position, item_type, summary_id, tokens, "
    "created_at) VALUES (?, ?, 'summary', ?, ?, ?)"
)
CONTEXT_ITEM_DELETE = "DELETE FROM context_items WHERE session_id = ? AND position = ?"
CONTEXT_TOKEN_TOTAL = "SELECT COALESCE(SUM(tokens), 0) FROM context_items WHERE session_id = ?"
COVERING_SUMMARY = (
    "WITH RECURSIVE up(id) AS ("
    "SELECT summary_id FROM summary_messages WHERE message_id = ? "
    "UNION SELECT sp.summary_id FROM summary_parents sp "
    "JOIN up ON sp.parent_summary_id = up.id) "
    "SELECT ci.summary_id FROM context_items ci JOIN up "
    "ON ci.summary_id = up.id WHERE ci.session_id = ? LIMIT 1"
)
"""The summary in a session's context that covers a message (message ID, session ID)."""


def check_replaced(commit: CompactionCommit, current: Mapping[int, Any]) -> None:
    """Raise :class:`CompactionLockedError` unless every replaced position still holds
    its item (``current``: position → item ID, as read in the commit's transaction)."""
    for position, item_id in commit.replaced:
        if current.get(position) != item_id:
            raise CompactionLockedError(
                f"context of session {commit.summary.session_id} changed during compaction "
                f"(position {position}); another compactor won, retry"
            )


def summary_values(
    commit: CompactionCommit, marker_id: str, file_ids: str, now: int
) -> tuple[Any, ...]:
    """The values of :data:`SUMMARY_INSERT` (``file_ids`` encoded by the backend)."""
    s = commit.summary
    return (
        s.id,
        s.session_id,
        s.kind,
        s.depth,
        s.level,
        s.content,
        s.token_count,
        file_ids,
        marker_id,
        s.span_start_message_id,
        s.span_end_message_id,
        s.source_message_count,
        s.created_at or now,
        index_text(s.content),
    )


def lineage_rows(commit: CompactionCommit) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The rows of ``SOURCE_INSERT`` (summary → messages) and :data:`PARENT_INSERT`
    (summary → merged summaries), in order."""
    sid = commit.summary.id
    sources = [(sid, mid, i) for i, mid in enumerate(commit.source_message_ids)]
    parents = [(sid, pid, i) for i, pid in enumerate(commit.parent_summary_ids)]
    return sources, parents


def commit_writes(
    commit: CompactionCommit,
    seq: int,
    neighbours: Sequence[Sequence[Any]],
    marker_rows: EncodedParts,
    now: int,
    *,
    is_summary: int | bool,
    file_ids: str,
) -> list[Batch]:
    """Every write of a commit whose replaced context was found in place, in order.

    ``seq`` is the marker message's, ``neighbours`` the rows of ``NEIGHBOURS_SELECT``
    read for it (the marker's parts get their search context from them);
    ``is_summary`` and ``file_ids`` are encoded as the backend stores them.
    """
    s = commit.summary
    m = commit.marker.message
    contexts = Contexts()
    contexts.start(m.session_id, seq, neighbours)
    contexts.apply(m.session_id, seq, m.role, m.created_at, m.is_summary, marker_rows)
    positions = [p for p, _ in commit.replaced]
    sources, parents = lineage_rows(commit)
    return [
        (MESSAGE_INSERT, [message_row(m, seq, is_summary)]),
        (PART_INSERT, part_rows(m.id, m.session_id, 0, marker_rows, now)),
        (SUMMARY_INSERT, [summary_values(commit, m.id, file_ids, now)]),
        (SOURCE_INSERT, sources),
        (PARENT_INSERT, parents),
        (CONTEXT_ITEM_DELETE, [(s.session_id, p) for p in positions]),
        (
            CONTEXT_SUMMARY_INSERT,
            [(s.session_id, min(positions), s.id, commit.context_tokens, now)],
        ),
    ]
