"""What the integrity checker and its repairs need from SQLite: consistent snapshots,
the permitted repairs and backups."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnesis.errors import MnesisStoreError
from mnesis.models.clock import now_ms
from mnesis.store.base import IntegritySnapshot
from mnesis.store.codec import dumps, loads_column
from mnesis.store.sqlite.rows import SQLiteStoreBase

__all__ = ["IntegrityMixin"]


class IntegrityMixin(SQLiteStoreBase):
    """Snapshots, repairs and backups (part of ``SQLiteStore``)."""

    async def engine_check(self, *, full: bool = False) -> list[str]:
        pragma = "integrity_check" if full else "quick_check"

        def _run(conn: sqlite3.Connection) -> list[str]:
            lines = [str(row[0]) for row in conn.execute(f"PRAGMA {pragma}(100)")]
            return [] if lines == ["ok"] else lines

        return await self.db.read(_run)

    async def integrity_snapshot(self, session_id: str) -> IntegritySnapshot:
        def _get(conn: sqlite3.Connection) -> IntegritySnapshot:
            # One read transaction: every query sees the same committed state.
            conn.execute("BEGIN")
            try:
                return _read(conn)
            finally:
                conn.execute("COMMIT")

        def _read(conn: sqlite3.Connection) -> IntegritySnapshot:
            context = [
                (r[0], r[1], r[2], r[3])
                for r in conn.execute(
                    "SELECT position, item_type, message_id, summary_id FROM context_items "
                    "WHERE session_id = ? ORDER BY position",
                    (session_id,),
                )
            ]
            missing = [
                r[0]
                for r in conn.execute(
                    "SELECT ci.position FROM context_items ci "
                    "LEFT JOIN messages m ON m.id = ci.message_id "
                    "LEFT JOIN summaries s ON s.id = ci.summary_id "
                    "WHERE ci.session_id = ? AND m.id IS NULL AND s.id IS NULL",
                    (session_id,),
                )
            ]
            messages = [
                (r[0], r[1], r[2], bool(r[3]), r[4])
                for r in conn.execute(
                    "SELECT id, seq, role, is_summary, token_estimate FROM messages "
                    "WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                )
            ]
            summaries = [
                (r[0], r[1], loads_column(r[2], "summaries", r[0], "file_ids"), r[3], r[4])
                for r in conn.execute(
                    "SELECT id, kind, file_ids, span_start_message_id, span_end_message_id "
                    "FROM summaries WHERE session_id = ? ORDER BY rowid",
                    (session_id,),
                )
            ]
            edges = [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT sm.summary_id, sm.message_id FROM summary_messages sm "
                    "JOIN summaries s ON s.id = sm.summary_id WHERE s.session_id = ? "
                    "ORDER BY sm.summary_id, sm.ordinal",
                    (session_id,),
                )
            ]
            parents = [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT sp.summary_id, sp.parent_summary_id FROM summary_parents sp "
                    "JOIN summaries s ON s.id = sp.summary_id WHERE s.session_id = ? "
                    "ORDER BY sp.summary_id, sp.ordinal",
                    (session_id,),
                )
            ]
            wanted = sorted({f for row in summaries for f in row[2]})
            known = {
                r[0]
                for r in conn.execute(
                    "SELECT file_id FROM file_references WHERE file_id IN "
                    "(SELECT value FROM json_each(?))",
                    (dumps(wanted),),
                )
            }
            return IntegritySnapshot(
                session_id, context, messages, summaries, edges, parents, known, missing
            )

        return await self.db.read(_get)

    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        now = now_ms()

        def _replace(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM context_items WHERE session_id = ?", (session_id,))
            conn.executemany(
                "INSERT INTO context_items (session_id, position, item_type, message_id, "
                "summary_id, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
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
        def _add(conn: sqlite3.Connection) -> None:
            first = conn.execute(
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM summary_messages WHERE summary_id = ?",
                (summary_id,),
            ).fetchone()[0]
            conn.executemany(
                "INSERT OR IGNORE INTO summary_messages (summary_id, message_id, ordinal) "
                "VALUES (?, ?, ?)",
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
