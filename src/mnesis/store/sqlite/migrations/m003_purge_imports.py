"""``purge_session`` and transcript import progress (SQLite).

The append-only delete guard admits deletes of a session only while a row of
``purge_grants`` names it; the purge inserts and removes that row inside its own
transaction, so no other connection ever sees it.
"""

from __future__ import annotations

from mnesis.store.shared.schema import DELETE_GUARDED, SQLITE, import_sources

__all__ = ["SQL"]

_BY_SESSION = "purge_grants WHERE session_id = OLD.session_id"
_BY_SUMMARY = (
    "purge_grants\n"
    "    WHERE session_id = (SELECT session_id FROM summaries WHERE id = OLD.summary_id)"
)
_GRANTS = {
    "sessions": "purge_grants WHERE session_id = OLD.id",
    "summary_messages": _BY_SUMMARY,
    "summary_parents": _BY_SUMMARY,
}
"""Where a deleted row's session is found, for the tables not holding a ``session_id``."""

_TRIGGERS = "".join(
    f"DROP TRIGGER {table}_no_delete;\n"
    f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}\n"
    f"WHEN NOT EXISTS (SELECT 1 FROM {_GRANTS.get(table, _BY_SESSION)}) BEGIN\n"
    f"    SELECT RAISE(ABORT, 'mnesis append-only: {reason}');\nEND;\n"
    for table, reason in DELETE_GUARDED
)

SQL = f"""
-- purge_session: the append-only guard admits deletes of a session only while a row of
-- purge_grants names it; the purge inserts and removes that row inside its own
-- transaction, so no other connection ever sees it.
CREATE TABLE purge_grants (session_id TEXT PRIMARY KEY);
{_TRIGGERS}
-- Transcript import progress: one row per imported file.
{import_sources(SQLITE)}"""
