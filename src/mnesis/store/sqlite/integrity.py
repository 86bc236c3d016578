"""What the integrity checker and its repairs need from SQLite: consistent snapshots,
the permitted repairs and backups."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnesis.errors import MnesisStoreError
from mnesis.models.clock import now_ms
from mnesis.store.base import IntegritySnapshot
from mnesis.store.codec import dumps, loads_column
from mnesis.store.records import ChainReport, EngineCheck
from mnesis.store.shared.integrity import (
    CONTEXT_DELETE,
    CONTEXT_INSERT,
    NEXT_SOURCE_ORDINAL,
    SOURCE_INSERT,
    BaseIntegrity,
    context_rows,
    snapshot,
    snapshot_queries,
    wanted_files,
)
from mnesis.store.sqlite.chain import read_chain
from mnesis.store.sqlite.context_slots import SLOTS_SNAPSHOT
from mnesis.store.sqlite.database import SQLiteDatabase

__all__ = ["SQLiteIntegrity"]

_SNAPSHOT = snapshot_queries("rowid")
_SLOTS_SNAPSHOT = {**_SNAPSHOT, "context": SLOTS_SNAPSHOT}


class SQLiteIntegrity(BaseIntegrity[SQLiteDatabase]):
    """Snapshots, repairs and backups (``SQLiteStore.integrity``)."""

    sum_fn = "TOTAL"

    async def engine_check(self, *, full: bool = False) -> EngineCheck:
        pragma = "integrity_check" if full else "quick_check"

        def _run(conn: sqlite3.Connection) -> EngineCheck:
            lines = [str(row[0]) for row in conn.execute(f"PRAGMA {pragma}(100)")]
            problems = [] if lines == ["ok"] else lines
            return EngineCheck(problems=problems, ran=[f"PRAGMA {pragma}"])

        return await self.db.read(_run)

    async def verify_chain(self, session_id: str, expect: bytes | None = None) -> ChainReport:
        def _get(conn: sqlite3.Connection) -> ChainReport:
            conn.execute("BEGIN")
            try:
                return read_chain(conn, session_id, expect)
            finally:
                conn.execute("COMMIT")

        return await self.db.read(_get)

    async def integrity_snapshot(self, session_id: str) -> IntegritySnapshot:
        def _get(conn: sqlite3.Connection) -> IntegritySnapshot:
            # One read transaction: every query sees the same committed state.
            conn.execute("BEGIN")
            try:
                return _read(conn)
            finally:
                conn.execute("COMMIT")

        def _read(conn: sqlite3.Connection) -> IntegritySnapshot:
            queries = _SLOTS_SNAPSHOT if self.db.context_keys else _SNAPSHOT
            rows = {
                name: conn.execute(sql, (session_id,)).fetchall() for name, sql in queries.items()
            }
            summaries = [
                (r[0], r[1], loads_column(r[2], "summaries", r[0], "file_ids"), r[3], r[4])
                for r in rows["summaries"]
            ]
            known = {
                r[0]
                for r in conn.execute(
                    "SELECT file_id FROM file_references WHERE file_id IN "
                    "(SELECT value FROM json_each(?))",
                    (dumps(wanted_files(summaries)),),
                )
            }
            return snapshot(session_id, rows, summaries, known)

        return await self.db.read(_get)

    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        now = now_ms()

        def _replace(conn: sqlite3.Connection) -> None:
            conn.execute(CONTEXT_DELETE, (session_id,))
            conn.executemany(CONTEXT_INSERT, context_rows(session_id, items, now))

        await self.db.write(_replace)

    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        def _add(conn: sqlite3.Connection) -> None:
            first = conn.execute(NEXT_SOURCE_ORDINAL, (summary_id,)).fetchone()[0]
            conn.executemany(
                SOURCE_INSERT.replace("INSERT", "INSERT OR IGNORE", 1),
                [(summary_id, mid, first + i) for i, mid in enumerate(message_ids)],
            )

        await self.db.write(_add)

    async def backup_to(self, path: str) -> None:
        def _backup(conn: sqlite3.Connection) -> None:
            try:
                target = sqlite3.connect(path)
                try:
                    conn.backup(target)
                finally:
                    target.close()
            except sqlite3.Error as exc:
                # The target failed, not this database: say so.
                raise MnesisStoreError(f"cannot write the backup {path}: {exc}") from exc

        await self.db.read(_backup)
