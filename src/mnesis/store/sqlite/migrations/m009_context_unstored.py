"""The neighbour context is indexed, not stored (SQLite).

``message_parts.search_context`` was the largest single cost on disk (about 2.2 bytes
per byte of chat text). The writer now indexes each part with the context it computed
(see :mod:`~mnesis.store.sqlite.fts_index`), searches rebuild it for their hits (see
:mod:`~mnesis.store.shared.hit_contexts`) and a purge rebuilds it to delete a part from
the contentless index. This migration:

* gives every part whose indexed context differs from the one history rebuilds (parts
  indexed by ``m004_search_context`` from rows that existed before it, where a part had
  been appended to an older message after a newer one was written) the rebuilt one, so
  the index holds exactly what :func:`~mnesis.store.shared.search_context.rebuild_contexts`
  gives;
* makes the per-row insert trigger, which now fires only for inserts the writer does not
  index itself, clear the column once it has indexed it, and the update trigger (tool
  parts, the only ones whose text may change, have no context) index no context;
* sets the column to NULL in every row (the append-only guard does not cover it).

The file does not shrink: the freed pages are reused by later writes, and ``VACUUM``
(run by hand) returns them to the file system.
"""

from __future__ import annotations

import sqlite3

from mnesis.store.shared.search_context import SESSION_PARTS_SELECT, rebuild_contexts

__all__ = ["migrate"]

_COLUMNS = (
    "CASE WHEN {p}.part_type = 'tool' THEN NULL ELSE {p}.text_content END, "
    "CASE WHEN {p}.part_type = 'tool' THEN {p}.text_content END, "
    "{context}, substr({p}.session_id, 6)"
)

_TRIGGERS = (
    "DROP TRIGGER message_parts_fts_insert",
    f"""
CREATE TRIGGER message_parts_fts_insert AFTER INSERT ON message_parts
WHEN NEW.text_content IS NOT NULL AND NOT EXISTS (SELECT 1 FROM fts_deferred) BEGIN
    INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id)
        VALUES (NEW.rowid, {_COLUMNS.format(p="NEW", context="NEW.search_context")});
    UPDATE message_parts SET search_context = NULL
        WHERE rowid = NEW.rowid AND NEW.search_context IS NOT NULL;
END
""",
    "DROP TRIGGER message_parts_fts_update",
    f"""
CREATE TRIGGER message_parts_fts_update AFTER UPDATE OF text_content ON message_parts
WHEN OLD.text_content IS NOT NEW.text_content BEGIN
    INSERT INTO message_parts_fts (message_parts_fts, rowid, text_content, tool_content,
                                   context, session_id)
        SELECT 'delete', OLD.rowid, {_COLUMNS.format(p="OLD", context="NULL")}
        WHERE OLD.text_content IS NOT NULL;
    INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id)
        SELECT NEW.rowid, {_COLUMNS.format(p="NEW", context="NULL")}
        WHERE NEW.text_content IS NOT NULL;
END
""",
)

_REINDEX = (
    "INSERT INTO message_parts_fts "
    "(message_parts_fts, rowid, text_content, tool_content, context, session_id) "
    f"SELECT 'delete', p.rowid, {_COLUMNS.format(p='p', context='p.search_context')} "
    "FROM message_parts p WHERE p.rowid = ?",
    "INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id) "
    f"SELECT p.rowid, {_COLUMNS.format(p='p', context='?')} FROM message_parts p "
    "WHERE p.rowid = ?",
)


def _reconcile(conn: sqlite3.Connection, session_id: str) -> None:
    """Index the rebuilt context of each part of a session whose stored one differs."""
    stored = dict(
        conn.execute(
            "SELECT rowid, search_context FROM message_parts "
            "WHERE session_id = ? AND text_content IS NOT NULL",
            (session_id,),
        )
    )
    rebuilt = rebuild_contexts(conn.execute(SESSION_PARTS_SELECT, (session_id,)))
    for key, context in rebuilt.items():
        if stored.get(key) != context:
            conn.execute(_REINDEX[0], (key,))
            conn.execute(_REINDEX[1], (context, key))


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migration (inside the caller's ``BEGIN IMMEDIATE`` transaction)."""
    sessions = [r[0] for r in conn.execute("SELECT DISTINCT session_id FROM message_parts")]
    for session_id in sessions:
        _reconcile(conn, session_id)
    for statement in _TRIGGERS:
        conn.execute(statement)
    conn.execute("UPDATE message_parts SET search_context = NULL WHERE search_context IS NOT NULL")
