"""SQLite: :meth:`~mnesis.store.base.StoreBackend.purge_session` and import progress.

Purging is the one path that deletes history. It runs in one ``BEGIN IMMEDIATE``
transaction that first writes a ``purge_grants`` row for each session it removes (the
append-only triggers admit deletes only for a granted session, see migration
``m003_purge_imports``) and removes those rows again before it commits, so the guard
stays in force for every other session and every other connection.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mnesis.errors import SessionNotFoundError
from mnesis.models.clock import now_ms
from mnesis.store.base import ImportSource, PurgeReport

if TYPE_CHECKING:
    from mnesis.store.sqlite.database import SQLiteDatabase

__all__ = ["PurgeMixin"]

_FTS_DELETE_PARTS = """
INSERT INTO message_parts_fts
    (message_parts_fts, rowid, text_content, tool_content, context, session_id)
SELECT 'delete', rowid,
    CASE WHEN part_type = 'tool' THEN NULL ELSE text_content END,
    CASE WHEN part_type = 'tool' THEN text_content END,
    search_context,
    substr(session_id, 6)
FROM message_parts WHERE session_id = ? AND text_content IS NOT NULL
"""
_FTS_DELETE_SUMMARIES = """
INSERT INTO summaries_fts (summaries_fts, rowid, search_text, session_id)
SELECT 'delete', rowid, search_text, substr(session_id, 6) FROM summaries WHERE session_id = ?
"""
_SUMMARY_IDS = "SELECT id FROM summaries WHERE session_id = ?"
_DELETES: tuple[tuple[str, str], ...] = (
    ("context_items", "DELETE FROM context_items WHERE session_id = ?"),
    ("compaction_locks", "DELETE FROM compaction_locks WHERE session_id = ?"),
    ("import_sources", "DELETE FROM import_sources WHERE session_id = ?"),
    ("summary_parents", f"DELETE FROM summary_parents WHERE summary_id IN ({_SUMMARY_IDS})"),
    ("summary_messages", f"DELETE FROM summary_messages WHERE summary_id IN ({_SUMMARY_IDS})"),
    ("summaries", "DELETE FROM summaries WHERE session_id = ?"),
    ("message_parts", "DELETE FROM message_parts WHERE session_id = ?"),
    ("messages", "DELETE FROM messages WHERE session_id = ?"),
)


def _descendants(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The session and its sub-agent sessions, children before parents."""
    rows = conn.execute(
        "WITH RECURSIVE tree(id, depth) AS (SELECT ?, 0 UNION ALL "
        "SELECT s.id, t.depth + 1 FROM sessions s JOIN tree t ON s.parent_id = t.id) "
        "SELECT id FROM tree ORDER BY depth DESC, id",
        (session_id,),
    ).fetchall()
    return [r[0] for r in rows]


def _purge_one(conn: sqlite3.Connection, session_id: str, rows: dict[str, int]) -> None:
    conn.execute(_FTS_DELETE_PARTS, (session_id,))
    conn.execute(_FTS_DELETE_SUMMARIES, (session_id,))
    for table, sql in _DELETES:
        rows[table] = rows.get(table, 0) + conn.execute(sql, (session_id,)).rowcount
    # Agentic-map bookkeeping and file references outlive the session, without it.
    conn.execute("UPDATE map_items SET session_id = NULL WHERE session_id = ?", (session_id,))
    removed = conn.execute(
        "DELETE FROM file_references WHERE session_id = ? AND NOT EXISTS ("
        "SELECT 1 FROM summaries s WHERE s.session_id != ? "
        "AND s.file_ids LIKE '%\"' || file_references.file_id || '\"%')",
        (session_id, session_id),
    ).rowcount
    conn.execute("UPDATE file_references SET session_id = NULL WHERE session_id = ?", (session_id,))
    rows["file_references"] = rows.get("file_references", 0) + removed
    rows["sessions"] = (
        rows.get("sessions", 0)
        + conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount
    )


def _source(row: Sequence[Any]) -> ImportSource:
    return ImportSource(
        source_key=row[0],
        format=row[1],
        path=row[2],
        session_id=row[3],
        byte_offset=int(row[4]),
        lines=int(row[5]),
        fingerprint=row[6],
        messages=int(row[7]),
        state=json.loads(row[8]),
        updated_at=int(row[9]),
    )


class PurgeMixin:
    """Purging a session and recording import progress, for :class:`SQLiteStore`."""

    db: SQLiteDatabase

    async def purge_session(self, session_id: str) -> PurgeReport:
        def _purge(conn: sqlite3.Connection) -> PurgeReport:
            if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                raise SessionNotFoundError(session_id)
            ids = _descendants(conn, session_id)
            conn.executemany(
                "INSERT INTO purge_grants (session_id) VALUES (?)", [(i,) for i in ids]
            )
            rows: dict[str, int] = {}
            for sid in ids:
                _purge_one(conn, sid, rows)
            conn.execute("DELETE FROM purge_grants")
            return PurgeReport(session_ids=tuple(ids), rows=rows)

        return await self.db.write(_purge)

    async def get_import_source(self, source_key: str) -> ImportSource | None:
        def _get(conn: sqlite3.Connection) -> ImportSource | None:
            row = conn.execute(
                "SELECT source_key, format, path, session_id, byte_offset, lines, fingerprint, "
                "messages, state, updated_at FROM import_sources WHERE source_key = ?",
                (source_key,),
            ).fetchone()
            if row is None:
                return None
            return _source(row)

        return await self.db.read(_get)

    async def put_import_source(self, source: ImportSource) -> None:
        source.updated_at = now_ms()

        def _put(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO import_sources (source_key, format, path, session_id, "
                "byte_offset, lines, fingerprint, messages, state, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    source.source_key,
                    source.format,
                    source.path,
                    source.session_id,
                    source.byte_offset,
                    source.lines,
                    source.fingerprint,
                    source.messages,
                    json.dumps(source.state, ensure_ascii=False),
                    source.updated_at,
                ),
            )

        await self.db.write(_put)
