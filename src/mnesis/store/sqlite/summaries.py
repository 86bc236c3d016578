"""The context view, compaction commits, summaries, their lineage and the compaction
locks in SQLite (``SQLiteStore.summaries``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from mnesis.models.clock import now_ms
from mnesis.store.base import AppendedMessage, CompactionCommit
from mnesis.store.codec import dumps
from mnesis.store.shared.chain import commit_links
from mnesis.store.shared.commit import (
    COVERING_SUMMARY,
    check_replaced,
    commit_writes,
)
from mnesis.store.shared.rows import encode_parts
from mnesis.store.shared.search_context import NEIGHBOURS_SELECT, neighbour_args
from mnesis.store.shared.summaries import BaseSummaries
from mnesis.store.sqlite.chain import extend_chain
from mnesis.store.sqlite.context_slots import SUMMARY_ITEMS, SUMMARY_ITEMS_BEFORE
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.rows import _next_value, ids_in

__all__ = ["SQLiteSummaries"]


class SQLiteSummaries(BaseSummaries[SQLiteDatabase]):
    """Context items, summaries, lineage and compaction locks (``SQLiteStore.summaries``)."""

    def _ids_in(self, column: str, ids: Sequence[str]) -> tuple[str, Any]:
        return ids_in(column, ids)

    def _summary_items(self) -> str:
        return SUMMARY_ITEMS if self.db.context_keys else SUMMARY_ITEMS_BEFORE

    async def commit_compaction(self, commit: CompactionCommit) -> AppendedMessage:
        s = commit.summary
        marker = commit.marker
        marker_rows = encode_parts(marker.parts, marker.part_tokens)
        now = now_ms()

        def _commit(conn: sqlite3.Connection) -> AppendedMessage:
            positions = [p for p, _ in commit.replaced]
            current = {
                p: row[0]
                for p in positions
                for row in conn.execute(
                    "SELECT COALESCE(message_id, summary_id) FROM context_items "
                    "WHERE session_id = ? AND position = ?",
                    (s.session_id, p),
                )
            }
            check_replaced(commit, current)
            m = marker.message
            seq = _next_value(conn, "messages", "seq", m.session_id)
            found = conn.execute(NEIGHBOURS_SELECT, neighbour_args(m.session_id, seq)).fetchall()
            writes = commit_writes(
                commit, seq, found, marker_rows, now,
                is_summary=int(m.is_summary), file_ids=dumps(s.file_ids),
            )  # fmt: skip
            for sql, rows in writes:
                if rows:
                    conn.executemany(sql, rows)
            if self.db.chained:
                extend_chain(conn, commit_links(writes, list(s.file_ids)))
            return AppendedMessage(m.id, seq, None, tuple(r[0] for r in marker_rows))

        return await self.db.write(_commit)

    async def covering_context_summaries(
        self, session_id: str, message_ids: Sequence[str]
    ) -> dict[str, str | None]:
        def _get(conn: sqlite3.Connection) -> dict[str, str | None]:
            out: dict[str, str | None] = {}
            for mid in message_ids:
                row = conn.execute(COVERING_SUMMARY, (mid, session_id)).fetchone()
                out[mid] = row[0] if row else None
            return out

        return await self.db.read(_get)
