"""``grep``'s reads around its search on SQLite (``SQLiteStore.grep_reads``; the
statements in :mod:`mnesis.store.shared.grep_reads`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.codec import dumps
from mnesis.store.shared.grep_reads import BaseGrepReads
from mnesis.store.sqlite.database import SQLiteDatabase

__all__ = ["SQLiteGrepReads"]


class SQLiteGrepReads(BaseGrepReads[SQLiteDatabase]):
    """ID lists travel as one JSON array each, read back with ``json_each``."""

    _ID_TABLE = "json_each(?)"

    def _id_list(self, ids: Sequence[str]) -> Any:
        return dumps(list(ids))

    async def _read_rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await self.db.rows(sql, args)
