"""The SQL dialect layer: statements are written once with ``?`` placeholders;
PostgreSQL (psycopg) runs them through :func:`pg`.

A statement shared this way must not contain a literal ``?`` or ``%``.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "CONTEXT_TOKENS_UPDATE",
    "DOWN_CTE",
    "FILE_BY_PATH",
    "FILE_SELECT",
    "MESSAGE_COLUMNS",
    "MESSAGE_INSERT",
    "PART_COLUMNS",
    "PART_INSERT",
    "SESSION_COLUMNS",
    "SUMMARY_COLUMNS",
    "TOMBSTONE",
    "pg",
    "select_list",
]


def pg(sql: str) -> str:
    """``sql`` with psycopg's ``%s`` placeholders instead of ``?``."""
    return sql.replace("?", "%s")


def select_list(columns: Iterable[str], as_text: Iterable[str] = ()) -> str:
    """``columns`` as a select list; those in ``as_text`` are cast to text (PostgreSQL
    enum columns)."""
    cast = set(as_text)
    return ", ".join(f"{c}::text" if c in cast else c for c in columns)


MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "role",
    "created_at",
    "agent",
    "model_id",
    "provider_id",
    "is_summary",
    "parent_id",
    "tokens_input",
    "tokens_output",
    "tokens_cache_read",
    "tokens_cache_write",
    "tokens_total",
    "cost",
    "finish_reason",
    "token_estimate",
)
"""The ``messages`` columns a read decodes, in the order of :func:`make_message`'s keys."""

PART_COLUMNS = (
    "id",
    "message_id",
    "content",
    "tool_state",
    "compacted_at",
    "started_at",
    "completed_at",
    "text_content",
    "part_type",
)
"""The ``message_parts`` columns a read decodes (``text_content`` restores the text the
``content`` JSON leaves out, ``part_type`` the type a minimal JSON leaves out)."""
SESSION_COLUMNS = (
    "id",
    "model",
    "agent",
    "parent_id",
    "system_prompt",
    "title",
    "status",
    "created_at",
    "updated_at",
    "config",
)
SUMMARY_COLUMNS = (
    "id",
    "session_id",
    "kind",
    "depth",
    "level",
    "content",
    "token_count",
    "file_ids",
    "message_id",
    "span_start_message_id",
    "span_end_message_id",
    "source_message_count",
    "created_at",
)

PART_INSERT = (
    "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
    "text_content, tool_name, tool_call_id, tool_state, compacted_at, started_at, "
    "completed_at, token_estimate, created_at, search_context) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

MESSAGE_INSERT = (
    f"INSERT INTO messages ({select_list(MESSAGE_COLUMNS)}, seq) VALUES "
    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
CONTEXT_TOKENS_UPDATE = "UPDATE context_items SET tokens = ? WHERE message_id = ?"
FILE_SELECT = (
    "SELECT content_id, file_id, path, file_type, token_count, exploration_summary, "
    "byte_size, session_id, created_at FROM file_references "
    "WHERE content_id = ? OR file_id = ?"
)
FILE_BY_PATH = (
    "SELECT content_id, file_id, path, file_type, token_count, exploration_summary, "
    "byte_size, session_id, created_at FROM file_references "
    "WHERE path = ? ORDER BY created_at DESC, file_id DESC LIMIT 1"
)
DOWN_CTE = (
    "WITH RECURSIVE down(id) AS (SELECT CAST(? AS TEXT) UNION SELECT sp.parent_summary_id "
    "FROM summary_parents sp JOIN down ON sp.summary_id = down.id)"
)
"""Every summary below (and including) a summary, through the condensation levels."""

TOMBSTONE = (
    (
        "UPDATE message_parts SET compacted_at = ?, token_estimate = ? "
        "WHERE id = ? AND part_type = 'tool' AND compacted_at IS NULL"
    ),
    "UPDATE messages SET token_estimate = ? WHERE id = ?",
    CONTEXT_TOKENS_UPDATE,
)
"""Tombstoning tool outputs: the parts, then their messages' and context items' tokens
(see :func:`~mnesis.store.shared.rows.tombstone_rows`)."""
