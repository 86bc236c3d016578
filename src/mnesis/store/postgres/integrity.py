"""What the integrity checker and its repairs need from PostgreSQL: consistent
snapshots, the engine's own checks, the permitted repairs and backups."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from mnesis.errors import InvalidArgumentError, MnesisStoreError
from mnesis.store.base import IntegritySnapshot
from mnesis.store.postgres.chain import read_chain
from mnesis.store.postgres.db import Conn, PostgresDatabase, redact_url
from mnesis.store.postgres.engine_check import run_engine_check
from mnesis.store.postgres.migrations import MIGRATIONS
from mnesis.store.postgres.rows import execute_many, fetch, lock_session, now_ms
from mnesis.store.records import ChainReport, EngineCheck
from mnesis.store.shared import integrity as shared
from mnesis.store.shared.integrity import BaseIntegrity, wanted_files
from mnesis.store.shared.sql import pg

__all__ = ["BACKUP_FORMAT", "BACKUP_TABLES", "PostgresIntegrity"]

_SNAPSHOT = shared.snapshot_queries("key", as_text="::text")

BACKUP_FORMAT = "mnesis-postgres-backup"
BACKUP_TABLES = (
    "_mnesis_migrations",
    "sessions",
    "messages",
    "message_parts",
    "summaries",
    "summary_messages",
    "summary_parents",
    "context_items",
    "file_references",
    "compaction_locks",
    "map_runs",
    "map_items",
    "import_sources",
)
"""Every table, parents before children (the order a restore inserts them in)."""
_BATCH = 1000


class PostgresIntegrity(BaseIntegrity[PostgresDatabase]):
    """Snapshots, repairs and backups (``PostgresStore.integrity``)."""

    async def verify_chain(self, session_id: str, expect: bytes | None = None) -> ChainReport:
        return await self.db.snapshot(lambda conn: read_chain(conn, session_id, expect))

    async def integrity_snapshot(self, session_id: str) -> IntegritySnapshot:
        async def _read(conn: Conn) -> IntegritySnapshot:
            rows = {
                name: await fetch(conn, pg(sql), (session_id,)) for name, sql in _SNAPSHOT.items()
            }
            summaries = [(r[0], r[1], list(r[2]), r[3], r[4]) for r in rows["summaries"]]
            known = {
                r[0]
                for r in await fetch(
                    conn,
                    "SELECT file_id FROM file_references WHERE file_id = ANY(%s)",
                    (wanted_files(summaries),),
                )
            }
            return shared.snapshot(session_id, rows, summaries, known)

        return await self.db.snapshot(_read)

    async def engine_check(self, *, full: bool = False) -> EngineCheck:
        async def _run(conn: Conn) -> EngineCheck:
            return await run_engine_check(conn, BACKUP_TABLES, full=full)

        return await self.db.read(_run)

    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        now = now_ms()

        async def _replace(conn: Conn) -> None:
            await lock_session(conn, session_id)
            await conn.execute(pg(shared.CONTEXT_DELETE), (session_id,))
            await execute_many(
                conn, pg(shared.CONTEXT_INSERT), shared.context_rows(session_id, items, now)
            )

        await self.db.write(_replace)

    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        async def _add(conn: Conn) -> None:
            rows = await fetch(conn, pg(shared.NEXT_SOURCE_ORDINAL), (summary_id,))
            first = int(rows[0][0])
            await execute_many(
                conn,
                pg(shared.SOURCE_INSERT) + " ON CONFLICT DO NOTHING",
                [(summary_id, mid, first + i) for i, mid in enumerate(message_ids)],
            )

        await self.db.write(_add)

    async def backup_to(self, path: str) -> None:
        """Write every table as JSON lines, read in one ``REPEATABLE READ`` snapshot.

        The first line is ``{"format": "mnesis-postgres-backup", "version": 1, ...}``;
        each further line is ``{"table": name, "row": {column: value}}`` (generated
        columns left out), tables in :data:`BACKUP_TABLES` order. ``path`` is a new
        file; a URL (the database itself, another server) is an invalid argument."""
        if "://" in path:
            raise InvalidArgumentError(
                f"backup path {redact_url(path)} is a URL; a PostgreSQL backup is a "
                "JSON-lines file: name a new file"
            )
        try:
            out = await asyncio.to_thread(open, path, "x", encoding="utf-8")
        except OSError as exc:
            raise MnesisStoreError(f"cannot write the backup {path}: {exc}") from exc

        async def _dump(conn: Conn) -> None:
            header = {
                "format": BACKUP_FORMAT,
                "version": 1,
                "migrations": [name for name, _ in MIGRATIONS],
                "source": self.db.location,
            }
            await _write(out, [json.dumps(header)])
            for table in BACKUP_TABLES:
                columns = [
                    r[0]
                    for r in await fetch(
                        conn,
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() AND table_name = %s "
                        "AND is_generated = 'NEVER' AND column_name <> 'key' "
                        "ORDER BY ordinal_position",
                        (table,),
                    )
                ]
                cols = ", ".join(f'"{c}"' for c in columns)
                lines: list[str] = []
                async with conn.cursor(name=f"backup_{table}") as cur:
                    await cur.execute(f"SELECT {cols} FROM {table} ORDER BY 1")
                    async for row in cur:
                        lines.append(_line(table, columns, row))
                        if len(lines) >= _BATCH:
                            await _write(out, lines)
                            lines = []
                await _write(out, lines)

        try:
            await self.db.snapshot(_dump)
        except BaseException:
            await asyncio.to_thread(out.close)
            raise
        try:
            await asyncio.to_thread(out.close)
        except OSError as exc:
            raise MnesisStoreError(f"cannot write the backup {path}: {exc}") from exc


def _line(table: str, columns: Sequence[str], row: Sequence[Any]) -> str:
    return json.dumps({"table": table, "row": dict(zip(columns, row, strict=True))})


async def _write(out: Any, lines: Sequence[str]) -> None:
    if lines:
        try:
            await asyncio.to_thread(out.write, "".join(line + "\n" for line in lines))
        except OSError as exc:
            raise MnesisStoreError(f"cannot write the backup {out.name}: {exc}") from exc
