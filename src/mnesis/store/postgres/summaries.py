"""The context view, compaction commits, summaries, their lineage and the compaction
leases in PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from mnesis.store.base import AppendedMessage, CompactionCommit, ContextItem, SummaryRecord
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import (
    SUMMARY_COLS,
    PostgresStoreBase,
    execute_many,
    fetch,
    fetch_one,
    insert_message,
    insert_parts,
    lock_session,
    next_value,
    now_ms,
    summary_record,
)
from mnesis.store.shared.commit import (
    CONTEXT_SUMMARY_INSERT,
    CONTEXT_TOKEN_TOTAL,
    COVERING_SUMMARY,
    PARENT_INSERT,
    SUMMARY_INSERT,
    check_replaced,
    lineage_rows,
    summary_values,
)
from mnesis.store.shared.integrity import SOURCE_INSERT
from mnesis.store.shared.lineage import LOCK_ACQUIRE, LOCK_OWNER, LOCK_RELEASE, lock_args
from mnesis.store.shared.rows import encode_parts
from mnesis.store.shared.search_context import NEIGHBOURS_SELECT, Contexts, neighbour_args
from mnesis.store.shared.sql import pg

__all__ = ["SummariesMixin"]


class SummariesMixin(PostgresStoreBase):
    """Context items, summaries, lineage and compaction leases (part of ``PostgresStore``)."""

    async def get_context_items(
        self,
        session_id: str,
        *,
        item_type: Literal["message", "summary"] | None = None,
        newest_first: bool = False,
        before_position: int | None = None,
        limit: int | None = None,
    ) -> list[ContextItem]:
        where = ["ci.session_id = %s"]
        args: list[Any] = [session_id]
        if item_type is not None:
            where.append("ci.item_type = %s")
            args.append(item_type)
        if before_position is not None:
            where.append("ci.position < %s")
            args.append(before_position)
        args.append(limit)
        sql = (
            "SELECT ci.position, ci.item_type::text, COALESCE(ci.message_id, ci.summary_id), "
            "ci.tokens, m.role::text FROM context_items ci "
            "LEFT JOIN messages m ON m.id = ci.message_id "
            f"WHERE {' AND '.join(where)} ORDER BY ci.position "
            f"{'DESC' if newest_first else 'ASC'} LIMIT %s"
        )

        async def _get(conn: Conn) -> list[ContextItem]:
            return [ContextItem(r[0], r[1], r[2], r[3], r[4]) for r in await fetch(conn, sql, args)]

        return await self.db.read(_get)

    async def context_token_total(self, session_id: str) -> int:
        async def _sum(conn: Conn) -> int:
            row = await fetch_one(conn, pg(CONTEXT_TOKEN_TOTAL), (session_id,))
            assert row is not None
            return int(row[0])

        return await self.db.read(_sum)

    # summaries ------------------------------------------------------------
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
            contexts = Contexts()
            found = await fetch(conn, pg(NEIGHBOURS_SELECT), neighbour_args(m.session_id, seq))
            contexts.start(m.session_id, seq, found)
            contexts.apply(m.session_id, seq, m.role, m.created_at, m.is_summary, marker_rows)
            await insert_message(conn, m, seq)
            await insert_parts(conn, m.id, m.session_id, 0, marker_rows, now)
            file_ids = json.dumps(list(s.file_ids))
            await conn.execute(pg(SUMMARY_INSERT), summary_values(commit, m.id, file_ids, now))
            sources, parents = lineage_rows(commit)
            await execute_many(conn, pg(SOURCE_INSERT), sources)
            await execute_many(conn, pg(PARENT_INSERT), parents)
            await conn.execute(
                "DELETE FROM context_items WHERE session_id = %s AND position = ANY(%s)",
                (s.session_id, positions),
            )
            await conn.execute(
                pg(CONTEXT_SUMMARY_INSERT),
                (s.session_id, min(positions), s.id, commit.context_tokens, now),
            )
            return AppendedMessage(m.id, seq, None, tuple(r[0] for r in marker_rows))

        return await self.db.write(_commit)

    async def get_summaries(self, summary_ids: Sequence[str]) -> list[SummaryRecord]:
        if not summary_ids:
            return []

        async def _get(conn: Conn) -> list[SummaryRecord]:
            rows = await fetch(
                conn,
                f"SELECT {SUMMARY_COLS} FROM summaries WHERE id = ANY(%s)",
                (list(summary_ids),),
            )
            by_id = {r[0]: summary_record(r) for r in rows}
            return [by_id[i] for i in summary_ids if i in by_id]

        return await self.db.read(_get)

    async def acquire_compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float, *, steal_from: str | None = None
    ) -> bool:
        async def _acquire(conn: Conn) -> bool:
            cur = await conn.execute(
                pg(LOCK_ACQUIRE), lock_args(session_id, owner, ttl_seconds, steal_from, now_ms())
            )
            return cur.rowcount == 1

        return await self.db.write(_acquire)

    async def compaction_lock_owner(self, session_id: str) -> str | None:
        async def _get(conn: Conn) -> str | None:
            row = await fetch_one(conn, pg(LOCK_OWNER), (session_id,))
            return None if row is None else str(row[0])

        return await self.db.read(_get)

    async def release_compaction_lock(self, session_id: str, owner: str) -> None:
        async def _release(conn: Conn) -> None:
            await conn.execute(pg(LOCK_RELEASE), (session_id, owner))

        await self.db.write(_release)

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

    async def messages_in_context(self, session_id: str, message_ids: Sequence[str]) -> set[str]:
        if not message_ids:
            return set()
        return set(
            await self._first_column(
                "SELECT message_id FROM context_items WHERE session_id = %s "
                "AND message_id = ANY(%s)",
                (session_id, list(message_ids)),
            )
        )
