"""``part_vectors`` / ``summary_vectors`` on PostgreSQL (vectors as ``bytea``, no pgvector)."""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import execute_many, fetch, fetch_one
from mnesis.store.shared.sql import pg
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
from mnesis.store.vectors import PendingText, StoredVector, VectorKind, VectorStore

__all__ = ["PostgresVectorStore"]


class PostgresVectorStore(VectorStore):
    """:class:`~mnesis.store.vectors.VectorStore` on one PostgreSQL database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def pending(
        self, session_id: str, model: str, kind: VectorKind, limit: int
    ) -> list[PendingText]:
        async def _read(conn: Conn) -> list[PendingText]:
            rows = await fetch(conn, pg(PENDING[kind]), (model, session_id, limit))
            return [pending_text(kind, r) for r in rows]

        return await self._db.read(_read)

    async def put(self, model: str, rows: Sequence[tuple[PendingText, bytes]]) -> None:
        if not rows:
            return

        async def _write(conn: Conn) -> None:
            for kind in ("message", "summary"):
                batch = [put_row(model, t, v) for t, v in rows if t.kind == kind]
                await execute_many(conn, pg(PUT[kind]), batch)

        await self._db.write(_write)

    async def count(self, session_id: str, model: str, kind: VectorKind) -> int:
        async def _read(conn: Conn) -> int:
            row = await fetch_one(conn, pg(COUNT[kind]), (session_id, model))
            return 0 if row is None else int(row[0])

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

        async def _read(conn: Conn) -> list[StoredVector]:
            return [stored_vector(kind, r) for r in await fetch(conn, pg(SCAN[kind]), args)]

        return await self._db.read(_read)
