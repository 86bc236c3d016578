"""SQLite: :meth:`~mnesis.store.base.StoreBackend.purge_session` and import progress.

Purging is the one path that deletes history. It runs in one ``BEGIN IMMEDIATE``
transaction that first writes a ``purge_grants`` row for each session it removes (the
append-only triggers admit deletes only for a granted session, see migration
``m003_purge_imports``) and removes those rows again before it commits, so the guard
stays in force for every other session and every other connection.
"""

from __future__ import annotations

import sqlite3

from mnesis.errors import SessionNotFoundError
from mnesis.models.clock import now_ms
from mnesis.store.base import ImportSource, PurgeReport
from mnesis.store.shared.chain import CHAIN_DELETE
from mnesis.store.shared.purge import (
    DELETE_SESSION,
    DELETES,
    DESCENDANTS,
    SESSION_EXISTS,
    SOURCE_INSERT,
    SOURCE_SELECT,
    UNLINK_FILES,
    UNLINK_MAP_ITEMS,
    BasePurge,
    import_source,
    source_row,
)
from mnesis.store.sqlite.context_slots import SESSION_SLOTS_DELETE
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.fts_index import FTS_DELETE, fts_delete_rows

__all__ = ["SQLitePurge"]

_FTS_DELETE_SUMMARIES = """
INSERT INTO summaries_fts (summaries_fts, rowid, search_text, session_id)
SELECT 'delete', rowid, search_text, substr(session_id, 6) FROM summaries WHERE session_id = ?
"""


def _descendants(conn: sqlite3.Connection, session_id: str) -> list[str]:
    return [r[0] for r in conn.execute(DESCENDANTS, (session_id,))]


def _purge_one(
    conn: sqlite3.Connection, session_id: str, rows: dict[str, int], context_keys: bool
) -> None:
    # A contentless index forgets a row only given the values it was indexed with.
    conn.executemany(FTS_DELETE, fts_delete_rows(conn, session_id))
    conn.execute(_FTS_DELETE_SUMMARIES, (session_id,))
    for table, sql in DELETES:
        # The context view's delete counts no rows (SQLite counts none through a view).
        keys = context_keys and table == "context_items"
        statement = SESSION_SLOTS_DELETE if keys else sql
        rows[table] = rows.get(table, 0) + conn.execute(statement, (session_id,)).rowcount
    # Agentic-map bookkeeping and file references outlive the session, without it.
    conn.execute(UNLINK_MAP_ITEMS, (session_id,))
    removed = conn.execute(
        "DELETE FROM file_references WHERE session_id = ? AND NOT EXISTS ("
        "SELECT 1 FROM summaries s WHERE s.session_id != ? "
        "AND s.file_ids LIKE '%\"' || file_references.file_id || '\"%')",
        (session_id, session_id),
    ).rowcount
    conn.execute(UNLINK_FILES, (session_id,))
    rows["file_references"] = rows.get("file_references", 0) + removed
    rows["sessions"] = (
        rows.get("sessions", 0) + conn.execute(DELETE_SESSION, (session_id,)).rowcount
    )


class SQLitePurge(BasePurge[SQLiteDatabase]):
    """Purging a session and recording import progress (``SQLiteStore.purge``)."""

    async def purge_session(self, session_id: str) -> PurgeReport:
        def _purge(conn: sqlite3.Connection) -> PurgeReport:
            if not conn.execute(SESSION_EXISTS, (session_id,)).fetchone():
                raise SessionNotFoundError(session_id)
            ids = _descendants(conn, session_id)
            conn.executemany(
                "INSERT INTO purge_grants (session_id) VALUES (?)", [(i,) for i in ids]
            )
            rows: dict[str, int] = {}
            for sid in ids:
                _purge_one(conn, sid, rows, self.db.context_keys)
            if self.db.chained:  # the sessions' hash chains go with their rows
                conn.executemany(CHAIN_DELETE, [(i,) for i in ids])
            conn.execute("DELETE FROM purge_grants")
            return PurgeReport(session_ids=tuple(ids), rows=rows)

        return await self.db.write(_purge)

    async def get_import_source(self, source_key: str) -> ImportSource | None:
        def _get(conn: sqlite3.Connection) -> ImportSource | None:
            row = conn.execute(SOURCE_SELECT, (source_key,)).fetchone()
            if row is None:
                return None
            return import_source(row)

        return await self.db.read(_get)

    async def put_import_source(self, source: ImportSource) -> None:
        source.updated_at = now_ms()

        def _put(conn: sqlite3.Connection) -> None:
            conn.execute(
                SOURCE_INSERT.replace("INSERT", "INSERT OR REPLACE", 1), source_row(source)
            )

        await self.db.write(_put)
