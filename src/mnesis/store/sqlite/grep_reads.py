"""``grep``'s reads around its search on SQLite (statements in
:mod:`mnesis.store.shared.grep_reads`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.codec import dumps
from mnesis.store.shared.grep_reads import GrepReads
from mnesis.store.sqlite.rows import SQLiteStoreBase

__all__ = ["GrepReadsMixin"]


class GrepReadsMixin(SQLiteStoreBase, GrepReads):
    """ID lists travel as one JSON array each, read back with ``json_each``."""

    _ID_TABLE = "json_each(?)"

    def _id_list(self, ids: Sequence[str]) -> Any:
        return dumps(list(ids))

    async def _read_rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await self.db.rows(sql, args)
