"""``session_stats`` on SQLite: grouped aggregates (:mod:`mnesis.store.session_stats`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnesis.store.session_stats import STATEMENTS, SessionStats, assemble
from mnesis.store.sqlite.rows import SQLiteStoreBase

__all__ = ["StatsMixin"]


class StatsMixin(SQLiteStoreBase):
    """Per-session counts (part of ``SQLiteStore``)."""

    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        where = ""
        args: tuple[object, ...] = ()
        if session_ids is not None:
            clause, listed = self._ids_in("m.session_id", session_ids)
            where, args = f"WHERE {clause}", (listed,)

        def _read(conn: sqlite3.Connection) -> dict[str, SessionStats]:
            ids = (
                list(session_ids)
                if session_ids is not None
                else [r[0] for r in conn.execute("SELECT id FROM sessions")]
            )
            rows = {
                name: conn.execute(sql.format(where=where), args).fetchall()
                for name, sql in STATEMENTS.items()
            }
            return assemble(ids, rows)

        return await self.db.read(_read)
