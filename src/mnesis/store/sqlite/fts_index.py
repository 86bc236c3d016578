"""The writer indexes the parts it appends (SQLite).

The part rows carry their neighbour context only on their way to the full-text index:
the writer inserts them without it, then indexes them with the context it computed
(:func:`insert_indexed_parts`), while a row in ``fts_deferred`` holds the per-row
insert trigger off (see :mod:`~mnesis.store.sqlite.migrations.m009_context_unstored`;
the trigger remains for any other insert). A purge gives the index the same values
back (:func:`fts_delete_rows`), the contexts rebuilt from history.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from mnesis.store.shared.search_context import SESSION_PARTS_SELECT, rebuild_contexts
from mnesis.store.shared.sql import PART_INSERT

__all__ = [
    "FTS_DELETE",
    "FTS_INSERT",
    "HOLD_TRIGGER",
    "RELEASE_TRIGGER",
    "fts_delete_rows",
    "insert_indexed_parts",
]

FTS_INSERT = (
    "INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id) "
    "VALUES (?, ?, ?, ?, ?)"
)
FTS_DELETE = (
    "INSERT INTO message_parts_fts "
    "(message_parts_fts, rowid, text_content, tool_content, context, session_id) "
    "VALUES ('delete', ?, ?, ?, ?, ?)"
)
HOLD_TRIGGER = "INSERT OR IGNORE INTO fts_deferred (id) VALUES (1)"
"""Hold the per-row insert trigger off (inside the caller's write transaction)."""
RELEASE_TRIGGER = "DELETE FROM fts_deferred"

# Indexes into the values of ``PART_INSERT`` (see ``shared.rows.part_rows``).
_ID, _SESSION, _TYPE, _TEXT, _CONTEXT = 0, 2, 4, 6, 15


def _columns(
    key: int, part_type: str, text: str | None, context: str | None, session_id: str
) -> tuple[Any, ...]:
    """The indexed values of one part: own text or tool text, context, session token."""
    tool = part_type == "tool"
    return (key, None if tool else text, text if tool else None, context, session_id[5:])


def insert_indexed_parts(conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> None:
    """Insert part rows (values of ``PART_INSERT``, their ``search_context`` set) without
    storing the context, and index those with text, inside a write transaction."""
    if not rows:
        return
    before = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM message_parts").fetchone()[0]
    conn.execute(HOLD_TRIGGER)
    conn.executemany(PART_INSERT, [(*r[:_CONTEXT], None, *r[_CONTEXT + 1 :]) for r in rows])
    keys = dict(conn.execute("SELECT id, rowid FROM message_parts WHERE rowid > ?", (before,)))
    conn.executemany(
        FTS_INSERT,
        [
            _columns(keys[r[_ID]], r[_TYPE], r[_TEXT], r[_CONTEXT], r[_SESSION])
            for r in rows
            if r[_TEXT] is not None
        ],
    )
    conn.execute(RELEASE_TRIGGER)


def fts_delete_rows(conn: sqlite3.Connection, session_id: str) -> list[tuple[Any, ...]]:
    """The ``FTS_DELETE`` values of every indexed part of a session: exactly what it was
    indexed with, its context rebuilt from history."""
    rows = conn.execute(SESSION_PARTS_SELECT, (session_id,)).fetchall()
    contexts = rebuild_contexts(rows)
    return [
        _columns(key, part_type, text, contexts[key], session_id)
        for key, _, _, _, _, part_type, text in rows
        if text is not None
    ]
