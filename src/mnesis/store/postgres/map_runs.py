"""``map_runs`` / ``map_items`` on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from mnesis.models.clock import now_ms
from mnesis.store.map_runs import ItemRow, RunStart
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import execute_many, fetch, fetch_one
from mnesis.store.shared import map_runs as shared
from mnesis.store.shared.sql import pg

__all__ = ["PostgresMapRunStore"]

T = TypeVar("T")


class PostgresMapRunStore(shared.SQLMapRunStore):
    """:class:`~mnesis.store.map_runs.MapRunStore` on one PostgreSQL database.

    A write whose caller is cancelled still runs to its commit, on its own pooled
    connection; so that :meth:`release` (called on cancellation) lands after the claim
    or completion that was in flight for the same item, as it does on SQLite's single
    writer thread, the writes of each item are tracked until they commit.
    """

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._in_flight: dict[tuple[str, int], set[asyncio.Future[Any]]] = {}

    async def _tracked(self, run_id: str, idx: int, work: Awaitable[T]) -> T:
        key = (run_id, idx)
        task = asyncio.ensure_future(work)
        self._in_flight.setdefault(key, set()).add(task)

        def forget(done: asyncio.Future[Any]) -> None:
            if not done.cancelled():
                done.exception()  # a cancelled caller's error is not left unretrieved
            pending = self._in_flight.get(key)
            if pending is not None:
                pending.discard(done)
                if not pending:
                    del self._in_flight[key]

        task.add_done_callback(forget)
        return await asyncio.shield(task)

    async def release(self, run_id: str, idx: int) -> None:
        in_flight = self._in_flight.get((run_id, idx))
        if in_flight:
            await asyncio.wait(set(in_flight))
        await super().release(run_id, idx)

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

        return await self._tracked(run_id, idx, self._db.write(_claim))

    async def items(self, run_id: str) -> list[ItemRow]:
        return await self._db.read(lambda conn: _items(conn, run_id))

    async def _update(self, sql: str, args: Sequence[Any]) -> None:
        """Every item transition's arguments end with ``(run_id, idx)``."""

        async def _run(conn: Conn) -> None:
            await conn.execute(pg(sql), args)

        await self._tracked(str(args[-2]), int(args[-1]), self._db.write(_run))


async def _items(conn: Conn, run_id: str) -> list[ItemRow]:
    return [ItemRow(*r) for r in await fetch(conn, pg(shared.ITEMS_SELECT), (run_id,))]
