"""What the integrity checker and its repairs need from PostgreSQL: consistent
snapshots, the permitted repairs and backups."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from mnesis.errors import InvalidArgumentError, MnesisStoreError
from mnesis.store.base import IntegritySnapshot
from mnesis.store.postgres.db import Conn, redact_url
from mnesis.store.postgres.migrations import MIGRATIONS
from mnesis.store.postgres.rows import PostgresStoreBase, execute_many, fetch, lock_session, now_ms

__all__ = ["BACKUP_FORMAT", "BACKUP_TABLES", "IntegrityMixin"]

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


class IntegrityMixin(PostgresStoreBase):
    """Snapshots, repairs and backups (part of ``PostgresStore``)."""

    async def integrity_snapshot(self, session_id: str) -> IntegritySnapshot:
        async def _read(conn: Conn) -> IntegritySnapshot:
            context = [
                (r[0], r[1], r[2], r[3])
                for r in await fetch(
                    conn,
                    "SELECT position, item_type::text, message_id, summary_id "
                    "FROM context_items WHERE session_id = %s ORDER BY position",
                    (session_id,),
                )
            ]
            missing = [
                r[0]
                for r in await fetch(
                    conn,
                    "SELECT ci.position FROM context_items ci "
                    "LEFT JOIN messages m ON m.id = ci.message_id "
                    "LEFT JOIN summaries s ON s.id = ci.summary_id "
                    "WHERE ci.session_id = %s AND m.id IS NULL AND s.id IS NULL",
                    (session_id,),
                )
            ]
            messages = [
                (r[0], r[1], r[2], bool(r[3]), r[4])
                for r in await fetch(
                    conn,
                    "SELECT id, seq, role::text, is_summary, token_estimate FROM messages "
                    "WHERE session_id = %s ORDER BY seq",
                    (session_id,),
                )
            ]
            summaries = [
                (r[0], r[1], list(r[2]), r[3], r[4])
                for r in await fetch(
                    conn,
                    "SELECT id, kind::text, file_ids, span_start_message_id, "
                    "span_end_message_id FROM summaries WHERE session_id = %s ORDER BY key",
                    (session_id,),
                )
            ]
            edges = [
                (r[0], r[1])
                for r in await fetch(
                    conn,
                    "SELECT sm.summary_id, sm.message_id FROM summary_messages sm "
                    "JOIN summaries s ON s.id = sm.summary_id WHERE s.session_id = %s "
                    "ORDER BY sm.summary_id, sm.ordinal",
                    (session_id,),
                )
            ]
            parents = [
                (r[0], r[1])
                for r in await fetch(
                    conn,
                    "SELECT sp.summary_id, sp.parent_summary_id FROM summary_parents sp "
                    "JOIN summaries s ON s.id = sp.summary_id WHERE s.session_id = %s "
                    "ORDER BY sp.summary_id, sp.ordinal",
                    (session_id,),
                )
            ]
            wanted = sorted({f for row in summaries for f in row[2]})
            known = {
                r[0]
                for r in await fetch(
                    conn, "SELECT file_id FROM file_references WHERE file_id = ANY(%s)", (wanted,)
                )
            }
            return IntegritySnapshot(
                session_id, context, messages, summaries, edges, parents, known, missing
            )

        return await self.db.snapshot(_read)

    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        now = now_ms()

        async def _replace(conn: Conn) -> None:
            await lock_session(conn, session_id)
            await conn.execute("DELETE FROM context_items WHERE session_id = %s", (session_id,))
            await execute_many(
                conn,
                "INSERT INTO context_items (session_id, position, item_type, message_id, "
                "summary_id, tokens, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        session_id,
                        index + 1,
                        kind,
                        item_id if kind == "message" else None,
                        item_id if kind == "summary" else None,
                        tokens,
                        now,
                    )
                    for index, (kind, item_id, tokens) in enumerate(items)
                ],
            )

        await self.db.write(_replace)

    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        async def _add(conn: Conn) -> None:
            rows = await fetch(
                conn,
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM summary_messages WHERE summary_id = %s",
                (summary_id,),
            )
            first = int(rows[0][0])
            await execute_many(
                conn,
                "INSERT INTO summary_messages (summary_id, message_id, ordinal) "
                "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
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
