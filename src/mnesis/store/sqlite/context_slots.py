"""The SQLite statements that read or write ``context_slots`` directly.

Since ``m010_context_keys`` the context view is stored in ``context_slots``, keyed by
``sessions.rowid`` and ``messages.rowid``, under a view named ``context_items`` that
the statements shared with PostgreSQL read and write unchanged. The writer's hot paths
(appends) write the table itself, each key looked up by its text ID in the same
statement, so no trigger runs per row; a purge deletes from it to count the rows; the
summary reads and the integrity snapshot read it where the view cannot say what they
need. A file opened read-only may predate the migration, and tests write such files
with the migrations before it: then each statement falls back to the text-keyed table
(:attr:`~mnesis.store.sqlite.database.SQLiteDatabase.context_keys`).
"""

from __future__ import annotations

import sqlite3

from mnesis.store.shared.batch import CONTEXT_MESSAGE_INSERT
from mnesis.store.sqlite.rows import _next_value

__all__ = [
    "MESSAGE_SLOT_INSERT",
    "SESSION_SLOTS_DELETE",
    "SLOTS_SNAPSHOT",
    "SUMMARY_ITEMS",
    "SUMMARY_ITEMS_BEFORE",
    "message_slot_insert",
    "next_position",
]

_SESSION_KEY = "(SELECT rowid FROM sessions WHERE id = ?)"

MESSAGE_SLOT_INSERT = (
    "INSERT INTO context_slots (session_key, position, item_type, message_key, tokens, "
    f"created_at) VALUES ({_SESSION_KEY}, ?, 'message', "
    "(SELECT rowid FROM messages WHERE id = ?), ?, ?)"
)
"""The slot of an appended message: the arguments of
:data:`~mnesis.store.shared.batch.CONTEXT_MESSAGE_INSERT` (session ID, position,
message ID, tokens, created_at)."""

_NEXT_POSITION = (
    f"SELECT COALESCE(MAX(position), 0) + 1 FROM context_slots WHERE session_key = {_SESSION_KEY}"
)

SESSION_SLOTS_DELETE = f"DELETE FROM context_slots WHERE session_key = {_SESSION_KEY}"
"""A purge's delete of a session's context (the view's delete counts no rows)."""

SUMMARY_ITEMS = (
    "(SELECT sessions.id AS session_id, context_slots.position AS position, "
    "context_slots.item_type AS item_type, NULL AS message_id, "
    "context_slots.summary_id AS summary_id, context_slots.tokens AS tokens "
    "FROM context_slots INDEXED BY context_slots_summary_idx "
    "JOIN sessions ON sessions.rowid = context_slots.session_key "
    "WHERE context_slots.item_type = 'summary') ci "
)
"""The summaries of the context view, read through the partial summary index (without
``ANALYZE`` statistics SQLite prefers the primary key, which also orders by position,
and would visit every item of the session; a view takes no ``INDEXED BY``)."""

SUMMARY_ITEMS_BEFORE = "context_items ci INDEXED BY context_items_summary_idx "
"""The same on a file read-only before ``m010_context_keys`` (its text-keyed table)."""

SLOTS_SNAPSHOT = (
    "SELECT c.position, c.item_type, CASE WHEN c.message_key IS NOT NULL "
    "THEN COALESCE(m.id, 'message_key:' || c.message_key) END, c.summary_id "
    "FROM context_slots c JOIN sessions s ON s.rowid = c.session_key "
    "LEFT JOIN messages m ON m.rowid = c.message_key "
    "WHERE s.id = ? ORDER BY c.position"
)
"""The integrity snapshot's context rows; a message key that names no message (the
view shows no ID for it) is named by its number, for the violation to point at."""


def message_slot_insert(keys: bool) -> str:
    """:data:`MESSAGE_SLOT_INSERT`, or before ``m010_context_keys`` (not ``keys``) the
    text-keyed table's insert (the same arguments)."""
    return MESSAGE_SLOT_INSERT if keys else CONTEXT_MESSAGE_INSERT


def next_position(conn: sqlite3.Connection, session_id: str, *, keys: bool) -> int:
    """The next context position of a session (an index lookup on its maximum)."""
    if not keys:
        return _next_value(conn, "context_items", "position", session_id)
    return int(conn.execute(_NEXT_POSITION, (session_id,)).fetchone()[0])
