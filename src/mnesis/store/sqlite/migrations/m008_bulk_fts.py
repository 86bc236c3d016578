"""A batch indexes its parts in one statement (SQLite).

The full-text insert trigger skips its row while ``fts_deferred`` holds a row. A batch
append (``append_batch``) inserts that row, writes its parts, indexes them all with one
``INSERT INTO message_parts_fts … SELECT`` (:data:`INDEX_NEW_PARTS`) and deletes the row
again, all inside its own write transaction: no other connection ever sees it (the same
device as ``purge_grants``). Every other insert is indexed by the trigger, as before;
the indexed columns and their values are the trigger's.
"""

from __future__ import annotations

__all__ = ["INDEX_NEW_PARTS", "SQL"]

_COLUMNS = (
    "CASE WHEN {p}.part_type = 'tool' THEN NULL ELSE {p}.text_content END, "
    "CASE WHEN {p}.part_type = 'tool' THEN {p}.text_content END, "
    "{p}.search_context, substr({p}.session_id, 6)"
)

INDEX_NEW_PARTS = (
    "INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id) "
    f"SELECT p.rowid, {_COLUMNS.format(p='p')} FROM message_parts p "
    "WHERE p.rowid > ? AND p.text_content IS NOT NULL"
)
"""Index every part above a rowid (args: the highest rowid before the batch)."""

SQL = f"""
CREATE TABLE fts_deferred (id INTEGER PRIMARY KEY);
DROP TRIGGER message_parts_fts_insert;
CREATE TRIGGER message_parts_fts_insert AFTER INSERT ON message_parts
WHEN NEW.text_content IS NOT NULL AND NOT EXISTS (SELECT 1 FROM fts_deferred) BEGIN
    INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id)
        VALUES (NEW.rowid, {_COLUMNS.format(p="NEW")});
END;
"""
