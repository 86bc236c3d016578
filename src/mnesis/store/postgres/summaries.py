"""The context view, compaction commits, summaries, their lineage and the compaction
leases in PostgreSQL (``PostgresStore.summaries``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mnesis.store.base import AppendedMessage, CompactionCommit
from mnesis.store.postgres.chain import extend_chain
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import (
    execute_many,
    fetch,
    fetch_one,
    ids_in,
    lock_session,
    next_value,
    now_ms,
)
from mnesis.store.shared.chain import commit_links
from mnesis.store.shared.commit import (
    COVERING_SUMMARY,
    check_replaced,
    commit_writes,
)
from mnesis.store.shared.rows import encode_parts
from mnesis.store.shared.search_context import NEIGHBOURS_SELECT, neighbour_args
from mnesis.store.shared.sql import pg
from mnesis.store.shared.summaries import BaseSummaries

__all__ = ["PostgresSummaries"]


class PostgresSummaries(BaseSummaries[PostgresDatabase]):
    """Context items, summaries, lineage and compaction leases (``PostgresStore.summaries``)."""

    ENUMS_AS_TEXT = True
    JSON_AS_TEXT = False

    def _ids_in(self, column: str, ids: Sequence[str]) -> tuple[str, Any]:
        return ids_in(column, ids)

    async def commit_compaction(self, commit: CompactionCommit) -> AppendedMessage:
        s = commit.summary
        marker = commit.marker
        marker_rows = encode_parts(marker.parts, marker.part_tokens)
        now = now_ms()

        async def _commit(conn: Conn) -> AppendedMessage:
            await lock_session(conn, s.session_id)
            positions = [p for p, _ in commit.replaced]
            current = dict(
                await fetch(
                    conn,
                    "SELECT position, COALESCE(message_id, summary_id) FROM context_items "
                    "WHERE session_id = %s AND position = ANY(%s)",
                    (s.session_id, positions),
                )
            )
            check_replaced(commit, current)
            m = marker.message
            seq = await next_value(conn, "messages", "seq", m.session_id)
            found = await fetch(conn, pg(NEIGHBOURS_SELECT), neighbour_args(m.session_id, seq))
            writes = commit_writes(
                commit, seq, found, marker_rows, now,
                is_summary=bool(m.is_summary), file_ids=json.dumps(list(s.file_ids)),
            )  # fmt: skip
            for sql, rows in writes:
                await execute_many(conn, pg(sql), rows)
            if self.db.chained:
                await extend_chain(conn, commit_links(writes, list(s.file_ids)))
            return AppendedMessage(m.id, seq, None, tuple(r[0] for r in marker_rows))

        return await self.db.write(_commit)

    async def covering_context_summaries(
        self, session_id: str, message_ids: Sequence[str]
    ) -> dict[str, str | None]:
        async def _get(conn: Conn) -> dict[str, str | None]:
            out: dict[str, str | None] = {}
            for mid in message_ids:
                row = await fetch_one(conn, pg(COVERING_SUMMARY), (mid, session_id))
                out[mid] = row[0] if row else None
            return out

        return await self.db.snapshot(_get)
