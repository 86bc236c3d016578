"""``map_runs`` / ``map_items`` on SQLite, written through the file's single writer thread."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from mnesis.models.clock import now_ms
from mnesis.store.map_runs import ItemRow, RunStart
from mnesis.store.shared.map_runs import (
    CLAIM,
    ITEMS_INSERT,
    ITEMS_SELECT,
    RETRY_FAILED,
    RUN_INSERT,
    SQLMapRunStore,
)
from mnesis.store.sqlite.database import SQLiteDatabase

__all__ = ["SQLiteMapRunStore"]


def _items(conn: sqlite3.Connection, run_id: str) -> list[ItemRow]:
    return [ItemRow(*r) for r in conn.execute(ITEMS_SELECT, (run_id,))]


class SQLiteMapRunStore(SQLMapRunStore):
    """:class:`~mnesis.store.map_runs.MapRunStore` on one SQLite database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    async def _start(self, request: RunStart) -> tuple[list[ItemRow], bool]:
        run_id = request.run_id

        def _start(conn: sqlite3.Connection) -> tuple[list[ItemRow], bool]:
            found = conn.execute(
                "SELECT kind, config FROM map_runs WHERE id = ?", (run_id,)
            ).fetchone()
            now = now_ms()
            if found is None:
                conn.execute(RUN_INSERT, (run_id, request.kind, now, request.config_json()))
                conn.executemany(
                    ITEMS_INSERT,
                    [(run_id, idx, text, now) for idx, text in enumerate(request.inputs)],
                )
                return request.fresh_items(), False
            stored = _items(conn, run_id)
            request.check_resume(found[0], found[1], stored)
            if request.retry_failed:
                conn.execute(RETRY_FAILED, (now, run_id))
            return stored, True

        return await self._db.write(_start)

    async def claim(self, run_id: str, idx: int) -> int | None:
        def _claim(conn: sqlite3.Connection) -> int | None:
            if conn.execute(CLAIM, (now_ms(), run_id, idx)).rowcount == 0:
                return None
            row = conn.execute(
                "SELECT attempts FROM map_items WHERE run_id = ? AND idx = ?", (run_id, idx)
            ).fetchone()
            return int(row[0])

        return await self._db.write(_claim)

    async def items(self, run_id: str) -> list[ItemRow]:
        return await self._db.read(lambda conn: _items(conn, run_id))

    async def _update(self, sql: str, args: Sequence[Any]) -> None:
        def _run(conn: sqlite3.Connection) -> None:
            conn.execute(sql, args)

        await self._db.write(_run)
