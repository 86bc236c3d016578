"""Durable state of :class:`~mnesis.operators.AgenticMap` runs, in the session database.

Two tables live next to the session tables, written through the same single
writer thread (:meth:`SQLiteDatabase.write`), so they share its transactions'
guarantees and never contend with the sessions of the process:

* ``map_runs``: one row per run (``config`` is the JSON of what was asked);
* ``map_items``: one row per input, keyed ``(run_id, idx)``.

Invariants:

* An item moves ``pending → running → completed | failed``; only :meth:`claim`
  moves it to ``running`` and it increments ``attempts`` in the same
  transaction, so ``attempts`` counts every sub-session ever started for the
  item, including one a killed process left ``running``.
* :meth:`claim`, :meth:`complete` and :meth:`fail` never touch a ``completed``
  row, so an item completes once, however often its run is resumed.
* Rows are created with the run in one transaction: a run's items all exist or
  none do.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mnesis.errors import InvalidArgumentError
from mnesis.store.sqlite_db import SQLiteDatabase

__all__ = ["ItemRow", "ItemState", "MapRunStore"]

ItemState = Literal["pending", "running", "completed", "failed"]

_ITEM_COLS = "idx, input, state, attempts, output, error, session_id"


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class ItemRow:
    """One ``map_items`` row (``input`` and ``output`` are JSON text)."""

    idx: int
    input: str
    state: ItemState
    attempts: int
    output: str | None
    error: str | None
    session_id: str | None


def _item(row: Sequence[Any]) -> ItemRow:
    return ItemRow(*row)


class MapRunStore:
    """Reads and writes ``map_runs`` / ``map_items`` on one database."""

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
        """Create the run with one ``pending`` item per input, or load it if it exists.

        Returns the items (by ``idx``, as they were before this call) and whether the
        run already existed. Resuming
        requires the same ``kind``, the same inputs (JSON text) and the same values
        of ``fixed_keys`` in ``config``, else :class:`InvalidArgumentError`. With
        ``retry_failed`` the run's ``failed`` items become ``pending`` again.
        """

        def _start(conn: sqlite3.Connection) -> tuple[list[ItemRow], bool]:
            found = conn.execute(
                "SELECT kind, config FROM map_runs WHERE id = ?", (run_id,)
            ).fetchone()
            now = _now_ms()
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
            _check_same_run(conn, run_id, found, kind, config, inputs, fixed_keys)
            stored = conn.execute(
                f"SELECT {_ITEM_COLS} FROM map_items WHERE run_id = ? ORDER BY idx", (run_id,)
            ).fetchall()
            if retry_failed:
                conn.execute(
                    "UPDATE map_items SET state = 'pending', updated_at = ? "
                    "WHERE run_id = ? AND state = 'failed'",
                    (now, run_id),
                )
            return [_item(r) for r in stored], True

        return await self._db.write(_start)

    async def claim(self, run_id: str, idx: int) -> int | None:
        """Mark the item ``running`` for a new attempt; returns its attempt count, or
        ``None`` if it is already ``completed`` or ``failed``."""

        def _claim(conn: sqlite3.Connection) -> int | None:
            cursor = conn.execute(
                "UPDATE map_items SET state = 'running', attempts = attempts + 1, "
                "session_id = NULL, updated_at = ? "
                "WHERE run_id = ? AND idx = ? AND state IN ('pending', 'running')",
                (_now_ms(), run_id, idx),
            )
            if cursor.rowcount == 0:
                return None
            row = conn.execute(
                "SELECT attempts FROM map_items WHERE run_id = ? AND idx = ?", (run_id, idx)
            ).fetchone()
            return int(row[0])

        return await self._db.write(_claim)

    async def attach_session(self, run_id: str, idx: int, session_id: str) -> None:
        """Record the sub-session of the running attempt."""
        await self._update(
            "UPDATE map_items SET session_id = ?, updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state = 'running'",
            (session_id, _now_ms(), run_id, idx),
        )

    async def note_error(self, run_id: str, idx: int, error: str) -> None:
        """Record the error of a failed attempt that will be retried."""
        await self._update(
            "UPDATE map_items SET error = ?, updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state = 'running'",
            (error, _now_ms(), run_id, idx),
        )

    async def complete(self, run_id: str, idx: int, output: str, session_id: str) -> None:
        """Mark the item ``completed`` with its output (JSON text)."""
        await self._update(
            "UPDATE map_items SET state = 'completed', output = ?, error = NULL, "
            "session_id = ?, updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state = 'running'",
            (output, session_id, _now_ms(), run_id, idx),
        )

    async def fail(self, run_id: str, idx: int, error: str) -> None:
        """Mark the item ``failed`` (it will not run again unless retried explicitly)."""
        await self._update(
            "UPDATE map_items SET state = 'failed', error = ?, updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state IN ('pending', 'running')",
            (error, _now_ms(), run_id, idx),
        )

    async def release(self, run_id: str, idx: int) -> None:
        """Put an interrupted (cancelled) attempt back to ``pending``."""
        await self._update(
            "UPDATE map_items SET state = 'pending', updated_at = ? "
            "WHERE run_id = ? AND idx = ? AND state = 'running'",
            (_now_ms(), run_id, idx),
        )

    async def items(self, run_id: str) -> list[ItemRow]:
        """Every item of the run, by ``idx`` (empty if the run does not exist)."""

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


def _check_same_run(
    conn: sqlite3.Connection,
    run_id: str,
    found: Sequence[Any],
    kind: str,
    config: dict[str, Any],
    inputs: Sequence[str],
    fixed_keys: Sequence[str],
) -> None:
    stored_kind, stored_config = found[0], json.loads(found[1])
    if stored_kind != kind:
        raise InvalidArgumentError(
            f"run {run_id!r} is a {stored_kind!r} run, not {kind!r}; use a new run_id"
        )
    for key in fixed_keys:
        if stored_config.get(key) != config.get(key):
            raise InvalidArgumentError(
                f"run {run_id!r} was started with {key}={stored_config.get(key)!r}; resume it "
                f"with the same value (got {config.get(key)!r}) or use a new run_id"
            )
    stored = [
        r[0]
        for r in conn.execute(
            "SELECT input FROM map_items WHERE run_id = ? ORDER BY idx", (run_id,)
        )
    ]
    if len(stored) != len(inputs):
        raise InvalidArgumentError(
            f"run {run_id!r} has {len(stored)} inputs but {len(inputs)} were given; "
            "resume it with the same inputs or use a new run_id"
        )
    for idx, (old, new) in enumerate(zip(stored, inputs, strict=True)):
        if old != new:
            raise InvalidArgumentError(
                f"input {idx} of run {run_id!r} differs from the one stored "
                f"({old[:80]!r} vs {new[:80]!r}); resume it with the same inputs"
            )
