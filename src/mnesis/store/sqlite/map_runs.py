"""``map_runs`` / ``map_items`` on SQLite, written through the file's single writer thread."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from mnesis.models.clock import now_ms
from mnesis.store.map_runs import ItemRow, MapRunStore, check_same_run
from mnesis.store.sqlite.database import SQLiteDatabase

__all__ = ["SQLiteMapRunStore"]

_ITEM_COLS = "idx, input, state, attempts, output, error, session_id"


def _item(row: Sequence[Any]) -> ItemRow:
    return ItemRow(*row)


class SQLiteMapRunStore(MapRunStore):
    """:class:`MapRunStore` on one SQLite database."""

    def __init__(self, db: SQLiteDatabase) -> None:
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
        def _start(conn: sqlite3.Connection) -> tuple[list[ItemRow], bool]:
            found = conn.execute(
                "SELECT kind, config FROM map_runs WHERE id = ?", (run_id,)
            ).fetchone()
            now = now_ms()
            if found is None:
                conn.execute(
                    "INSERT INTO map_runs (id, kind, created_at, config) VALUES (?, ?, ?, ?)",
                    (run_id, kind, now, json.dumps(config, ensure_ascii=False, sort_keys=True)),
                )
                conn.executemany(
                    "INSERT INTO map_items (run_id, idx, input, state, attempts, updated_at) "
                    "VALUES (?, ?, ?, 'pending', 0, ?)",
                    [(run_id, idx, text, now) for idx, text in enumerate(inputs)],
                )
                rows = [
                    ItemRow(idx, text, "pending", 0, None, None, None)
                    for idx, text in enumerate(inputs)
                ]
                return rows, False
            stored = [
                _item(r)
                for r in conn.execute(
                    f"SELECT {_ITEM_COLS} FROM map_items WHERE run_id = ? ORDER BY idx",
                    (run_id,),
                )
            ]
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
                conn.execute(
                    "UPDATE map_items SET state = 'pending', updated_at = ? "
                    "WHERE run_id = ? AND state = 'failed'",
                    (now, run_id),
                )
            return stored, True

        return await self._db.write(_start)

    async def claim(self, run_id: str, idx: int) -> int | None:
        def _claim(conn: sqlite3.Connection) -> int | None:
            cursor = conn.execute(
                "UPDATE map_items SET state = 'running', attempts = attempts + 1, "
                "session_id = NULL, updated_at = ? "
                "WHERE run_id = ? AND idx = ? AND state IN ('pending', 'running')",
                (now_ms(), run_id, idx),
            )
            if cursor.rowcount == 0:
                return None
            row = conn.execute(
                "SELECT attempts FROM map_items WHERE run_id = ? AND idx = ?", (run_id, idx)
            ).fetchone()
            return int(row[0])

        return await self._db.write(_claim)

    async def attach_session(self, run_id: str, idx: int, session_id: str) -> None:
        await self._update(
            "UPDATE map_items SET session_id = ?, updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state = 'running'",
            (session_id, now_ms(), run_id, idx),
        )

    async def note_error(self, run_id: str, idx: int, error: str) -> None:
        await self._update(
            "UPDATE map_items SET error = ?, updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state = 'running'",
            (error, now_ms(), run_id, idx),
        )

    async def complete(self, run_id: str, idx: int, output: str, session_id: str) -> None:
        await self._update(
            "UPDATE map_items SET state = 'completed', output = ?, error = NULL, "
            "session_id = ?, updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state = 'running'",
            (output, session_id, now_ms(), run_id, idx),
        )

    async def fail(self, run_id: str, idx: int, error: str) -> None:
        await self._update(
            "UPDATE map_items SET state = 'failed', error = ?, updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state IN ('pending', 'running')",
            (error, now_ms(), run_id, idx),
        )

    async def release(self, run_id: str, idx: int) -> None:
        await self._update(
            "UPDATE map_items SET state = 'pending', updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state = 'running'",
            (now_ms(), run_id, idx),
        )

    async def items(self, run_id: str) -> list[ItemRow]:
        def _read(conn: sqlite3.Connection) -> list[ItemRow]:
            rows = conn.execute(
                f"SELECT {_ITEM_COLS} FROM map_items WHERE run_id = ? ORDER BY idx", (run_id,)
            ).fetchall()
            return [_item(r) for r in rows]

        return await self._db.read(_read)

    async def _update(self, sql: str, args: Sequence[Any]) -> None:
        def _run(conn: sqlite3.Connection) -> None:
            conn.execute(sql, args)

        await self._db.write(_run)
