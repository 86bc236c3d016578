"""``map_runs`` / ``map_items`` on PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.models.clock import now_ms
from mnesis.store.map_runs import ItemRow, RunStart
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import execute_many, fetch, fetch_one
from mnesis.store.shared import map_runs as shared
from mnesis.store.shared.sql import pg

__all__ = ["PostgresMapRunStore"]


class PostgresMapRunStore(shared.SQLMapRunStore):
    """:class:`~mnesis.store.map_runs.MapRunStore` on one PostgreSQL database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def _start(self, request: RunStart) -> tuple[list[ItemRow], bool]:
        run_id = request.run_id

        async def _start(conn: Conn) -> tuple[list[ItemRow], bool]:
            now = now_ms()
            # A concurrent start of the same run waits here until the first commits.
            created = await fetch_one(
                conn,
                pg(shared.RUN_INSERT) + " ON CONFLICT (id) DO NOTHING RETURNING id",
                (run_id, request.kind, now, request.config_json()),
            )
            if created is not None:
                await execute_many(
                    conn,
                    pg(shared.ITEMS_INSERT),
                    [(run_id, idx, text, now) for idx, text in enumerate(request.inputs)],
                )
                return request.fresh_items(), False
            found = await fetch_one(
                conn, "SELECT kind, config FROM map_runs WHERE id = %s FOR UPDATE", (run_id,)
            )
            assert found is not None
            stored = await _items(conn, run_id)
            request.check_resume(found[0], found[1], stored)
            if request.retry_failed:
                await conn.execute(pg(shared.RETRY_FAILED), (now, run_id))
            return stored, True

        return await self._db.write(_start)

    async def claim(self, run_id: str, idx: int) -> int | None:
        async def _claim(conn: Conn) -> int | None:
            row = await fetch_one(
                conn, pg(shared.CLAIM) + " RETURNING attempts", (now_ms(), run_id, idx)
            )
            return None if row is None else int(row[0])

        return await self._db.write(_claim)

    async def items(self, run_id: str) -> list[ItemRow]:
        return await self._db.read(lambda conn: _items(conn, run_id))

    async def _update(self, sql: str, args: Sequence[Any]) -> None:
        async def _run(conn: Conn) -> None:
            await conn.execute(pg(sql), args)

        await self._db.write(_run)


async def _items(conn: Conn, run_id: str) -> list[ItemRow]:
    return [ItemRow(*r) for r in await fetch(conn, pg(shared.ITEMS_SELECT), (run_id,))]
