"""``grep``'s reads around its search on PostgreSQL (``PostgresStore.grep_reads``; the
statements in :mod:`mnesis.store.shared.grep_reads`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.shared.grep_reads import BaseGrepReads
from mnesis.store.shared.sql import pg

__all__ = ["PostgresGrepReads"]

_RECENT = (
    "SELECT m.session_id, m.id, CAST(m.role AS TEXT), "
    "EXISTS (SELECT 1 FROM message_parts p WHERE p.message_id = m.id "
    "AND p.part_type = 'text'), "
    "EXISTS (SELECT 1 FROM message_parts p WHERE p.message_id = m.id "
    "AND p.part_type = 'tool') "
    "FROM unnest(?::text[]) AS ids(value) "
    "CROSS JOIN LATERAL (SELECT MAX(x.seq) AS top FROM messages x "
    "WHERE x.session_id = ids.value) tail "
    "CROSS JOIN LATERAL (SELECT * FROM messages n WHERE n.session_id = ids.value "
    "AND n.seq > tail.top - ? ORDER BY n.seq DESC LIMIT ?) m "
    "WHERE m.is_summary = ? ORDER BY m.session_id, m.seq"
)
"""The shared statement spelt for PostgreSQL's planner: each session's newest messages
by its ``(session_id, seq)`` index (``seq`` is unique in a session, so the ``LIMIT``
keeps them all). The shared spelling joins every message of the session to a
per-row ``MAX`` (6.6 s at 100k messages, JIT compilation included)."""


class PostgresGrepReads(BaseGrepReads[PostgresDatabase]):
    """ID lists travel as one ``text[]`` each, read back with ``unnest``."""

    _ID_TABLE = "unnest(?::text[]) AS ids(value)"

    def _id_list(self, ids: Sequence[str]) -> Any:
        return list(ids)

    def _recent_statement(
        self, session_ids: Sequence[str], count: int
    ) -> tuple[str, Sequence[Any]]:
        return _RECENT, (list(session_ids), count, count, False)

    async def _read_rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        # Prepared at once: planning the places statement costs more than running it.
        async def _read(conn: Conn) -> list[tuple[Any, ...]]:
            cur = await conn.execute(pg(sql), args, prepare=True)
            return await cur.fetchall()

        return await self.db.read(_read)
