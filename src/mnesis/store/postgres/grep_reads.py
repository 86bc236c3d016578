"""``grep``'s reads around its search on PostgreSQL (statements in
:mod:`mnesis.store.shared.grep_reads`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import PostgresStoreBase
from mnesis.store.shared.grep_reads import GrepReads
from mnesis.store.shared.sql import pg

__all__ = ["GrepReadsMixin"]


class GrepReadsMixin(PostgresStoreBase, GrepReads):
    """ID lists travel as one ``text[]`` each, read back with ``unnest``."""

    _ID_TABLE = "unnest(?::text[]) AS ids(value)"

    def _id_list(self, ids: Sequence[str]) -> Any:
        return list(ids)

    async def _read_rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        # Prepared at once: planning the places statement costs more than running it.
        async def _read(conn: Conn) -> list[tuple[Any, ...]]:
            cur = await conn.execute(pg(sql), args, prepare=True)
            return await cur.fetchall()

        return await self.db.read(_read)
