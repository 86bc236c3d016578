"""``map_runs`` / ``map_items`` on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mnesis.store.map_runs import ItemRow, MapRunStore, check_same_run
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import execute_many, fetch, fetch_one, now_ms

__all__ = ["PostgresMapRunStore"]

_ITEM_COLS = "idx, input, state, attempts, output, error, session_id"


class PostgresMapRunStore(MapRunStore):
    """:class:`MapRunStore` on one PostgreSQL database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def start(
        self,
        run_id: str,
        *,
        kind: str,
        config: dict[str, Any],
        inputs: Sequence[str],
        fixed_keys: Sequence[str] = (),
        retry_failed: bool = False,
    ) -> tuple[list[ItemRow], bool]:
        async def _start(conn: Conn) -> tuple[list[ItemRow], bool]:
            now = now_ms()
            # A concurrent start of the same run waits here until the first commits.
            created = await fetch_one(
                conn,
                "INSERT INTO map_runs (id, kind, created_at, config) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING RETURNING id",
                (run_id, kind, now, json.dumps(config, ensure_ascii=False, sort_keys=True)),
            )
            if created is not None:
                await execute_many(
                    conn,
                    "INSERT INTO map_items (run_id, idx, input, state, attempts, updated_at) "
                    "VALUES (%s, %s, %s, 'pending', 0, %s)",
                    [(run_id, idx, text, now) for idx, text in enumerate(inputs)],
                )
                rows = [
                    ItemRow(idx, text, "pending", 0, None, None, None)
                    for idx, text in enumerate(inputs)
                ]
                return rows, False
            found = await fetch_one(
                conn, "SELECT kind, config FROM map_runs WHERE id = %s FOR UPDATE", (run_id,)
            )
            assert found is not None
            stored = await _items(conn, run_id)
            check_same_run(
                run_id,
                stored_kind=found[0],
                stored_config=json.loads(found[1]),
                stored_inputs=[r.input for r in stored],
                kind=kind,
                config=config,
                inputs=inputs,
                fixed_keys=fixed_keys,
            )
            if retry_failed:
                await conn.execute(
                    "UPDATE map_items SET state = 'pending', updated_at = %s "
                    "WHERE run_id = %s AND state = 'failed'",
                    (now, run_id),
                )
            return stored, True

        return await self._db.write(_start)

    async def claim(self, run_id: str, idx: int) -> int | None:
        async def _claim(conn: Conn) -> int | None:
            row = await fetch_one(
                conn,
                "UPDATE map_items SET state = 'running', attempts = attempts + 1, "
                "session_id = NULL, updated_at = %s "
                "WHERE run_id = %s AND idx = %s AND state IN ('pending', 'running') "
                "RETURNING attempts",
                (now_ms(), run_id, idx),
            )
            return None if row is None else int(row[0])

        return await self._db.write(_claim)

    async def attach_session(self, run_id: str, idx: int, session_id: str) -> None:
        await self._update(
            "UPDATE map_items SET session_id = %s, updated_at = %s "
            "WHERE run_id = %s AND idx = %s AND state = 'running'",
            (session_id, now_ms(), run_id, idx),
        )

    async def note_error(self, run_id: str, idx: int, error: str) -> None:
        await self._update(
            "UPDATE map_items SET error = %s, updated_at = %s "
            "WHERE run_id = %s AND idx = %s AND state = 'running'",
            (error, now_ms(), run_id, idx),
        )

    async def complete(self, run_id: str, idx: int, output: str, session_id: str) -> None:
        await self._update(
            "UPDATE map_items SET state = 'completed', output = %s, error = NULL, "
            "session_id = %s, updated_at = %s "
            "WHERE run_id = %s AND idx = %s AND state = 'running'",
            (output, session_id, now_ms(), run_id, idx),
        )

    async def fail(self, run_id: str, idx: int, error: str) -> None:
        await self._update(
            "UPDATE map_items SET state = 'failed', error = %s, updated_at = %s "
            "WHERE run_id = %s AND idx = %s AND state IN ('pending', 'running')",
            (error, now_ms(), run_id, idx),
        )

    async def release(self, run_id: str, idx: int) -> None:
        await self._update(
            "UPDATE map_items SET state = 'pending', updated_at = %s "
            "WHERE run_id = %s AND idx = %s AND state = 'running'",
            (now_ms(), run_id, idx),
        )

    async def items(self, run_id: str) -> list[ItemRow]:
        return await self._db.read(lambda conn: _items(conn, run_id))

    async def _update(self, sql: str, args: Sequence[Any]) -> None:
        async def _run(conn: Conn) -> None:
            await conn.execute(sql, args)

        await self._db.write(_run)


async def _items(conn: Conn, run_id: str) -> list[ItemRow]:
    rows = await fetch(
        conn, f"SELECT {_ITEM_COLS} FROM map_items WHERE run_id = %s ORDER BY idx", (run_id,)
    )
    return [ItemRow(*r) for r in rows]
