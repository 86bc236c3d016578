"""``grep``'s reads around its search on PostgreSQL (statements in
:mod:`mnesis.store.shared.grep_reads`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.postgres.rows import PostgresStoreBase
from mnesis.store.shared.grep_reads import GrepReads

__all__ = ["GrepReadsMixin"]


class GrepReadsMixin(PostgresStoreBase, GrepReads):
    """ID lists travel as one ``text[]`` each, read back with ``unnest``."""

    _ID_TABLE = "unnest(?::text[]) AS ids(value)"

    def _id_list(self, ids: Sequence[str]) -> Any:
        return list(ids)

    async def _read_rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await self.db.rows(sql, args)
