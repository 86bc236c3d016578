"""``session_stats`` on SQLite: grouped aggregates (:mod:`mnesis.store.session_stats`);
``used_bytes``: the file's pages that hold data."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnesis.store.session_stats import BaseStats, SessionStats, assemble, queries
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.rows import ids_in

__all__ = ["SQLiteStats"]


class SQLiteStats(BaseStats[SQLiteDatabase]):
    """Per-session counts (``SQLiteStore.stats``)."""

    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        listed = None if session_ids is None else ids_in("m.session_id", session_ids)

        def _read(conn: sqlite3.Connection) -> dict[str, SessionStats]:
            ids = session_ids
            if ids is None:
                ids = [r[0] for r in conn.execute("SELECT id FROM sessions")]
            rows = {name: conn.execute(sql, args).fetchall() for name, sql, args in queries(listed)}
            return assemble(ids, rows)

        return await self.db.read(_read)

    async def used_bytes(self) -> int:
        def _used(conn: sqlite3.Connection) -> int:
            pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
            free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
            return (pages - free) * int(conn.execute("PRAGMA page_size").fetchone()[0])

        return await self.db.read(_used)
