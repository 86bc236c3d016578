"""``session_stats`` on PostgreSQL: grouped aggregates (:mod:`mnesis.store.session_stats`),
read in one snapshot; ``used_bytes``: the schema's tables with their indexes and TOAST."""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import fetch, ids_in
from mnesis.store.session_stats import BaseStats, SessionStats, assemble, queries
from mnesis.store.shared.sql import pg

__all__ = ["PostgresStats"]


class PostgresStats(BaseStats[PostgresDatabase]):
    """Per-session counts (``PostgresStore.stats``)."""

    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        listed = None if session_ids is None else ids_in("m.session_id", session_ids)

        async def _read(conn: Conn) -> dict[str, SessionStats]:
            ids = session_ids
            if ids is None:
                ids = [r[0] for r in await fetch(conn, "SELECT id FROM sessions")]
            rows = {name: await fetch(conn, pg(sql), args) for name, sql, args in queries(listed)}
            return assemble(ids, rows)

        return await self.db.snapshot(_read)

    async def used_bytes(self) -> int:
        async def _used(conn: Conn) -> int:
            cur = await conn.execute(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
            )
            row = await cur.fetchone()
            return int(row[0]) if row is not None else 0

        return await self.db.read(_used)
