"""``part_vectors`` / ``summary_vectors`` on SQLite (writes go through the file's writer thread)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnesis.store.shared.vectors import (
    COUNT,
    PENDING,
    PUT,
    SCAN,
    pending_text,
    put_row,
    scan_args,
    stored_vector,
)
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.vectors import PendingText, StoredVector, VectorKind, VectorStore

__all__ = ["SQLiteVectorStore"]


class SQLiteVectorStore(VectorStore):
    """:class:`~mnesis.store.vectors.VectorStore` on one SQLite database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    async def pending(
        self, session_id: str, model: str, kind: VectorKind, limit: int
    ) -> list[PendingText]:
        def _read(conn: sqlite3.Connection) -> list[PendingText]:
            rows = conn.execute(PENDING[kind], (model, session_id, limit))
            return [pending_text(kind, r) for r in rows]

        return await self._db.read(_read)

    async def put(self, model: str, rows: Sequence[tuple[PendingText, bytes]]) -> None:
        if not rows:
            return

        def _write(conn: sqlite3.Connection) -> None:
            for kind in ("message", "summary"):
                batch = [put_row(model, t, v) for t, v in rows if t.kind == kind]
                if batch:
                    conn.executemany(PUT[kind], batch)

        await self._db.write(_write)

    async def count(self, session_id: str, model: str, kind: VectorKind) -> int:
        def _read(conn: sqlite3.Connection) -> int:
            return int(conn.execute(COUNT[kind], (session_id, model)).fetchone()[0])

        return await self._db.read(_read)

    async def scan(
        self,
        session_id: str,
        model: str,
        kind: VectorKind,
        *,
        after_key: int,
        limit: int,
        since: int | None = None,
        until: int | None = None,
    ) -> list[StoredVector]:
        args = scan_args(session_id, model, after_key, limit, since, until)

        def _read(conn: sqlite3.Connection) -> list[StoredVector]:
            return [stored_vector(kind, r) for r in conn.execute(SCAN[kind], args)]

        return await self._db.read(_read)
