"""``session_stats`` on PostgreSQL: grouped aggregates (:mod:`mnesis.store.session_stats`),
read in one snapshot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import PostgresStoreBase, fetch
from mnesis.store.session_stats import STATEMENTS, SessionStats, assemble
from mnesis.store.shared.sql import pg

__all__ = ["StatsMixin"]


class StatsMixin(PostgresStoreBase):
    """Per-session counts (part of ``PostgresStore``)."""

    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        where = ""
        args: tuple[object, ...] = ()
        if session_ids is not None:
            clause, listed = self._ids_in("m.session_id", session_ids)
            where, args = f"WHERE {clause}", (listed,)

        async def _read(conn: Conn) -> dict[str, SessionStats]:
            ids = (
                list(session_ids)
                if session_ids is not None
                else [r[0] for r in await fetch(conn, "SELECT id FROM sessions")]
            )
            rows: dict[str, Any] = {}
            for name, sql in STATEMENTS.items():
                rows[name] = await fetch(conn, pg(sql.format(where=where)), args)
            return assemble(ids, rows)

        return await self.db.snapshot(_read)
