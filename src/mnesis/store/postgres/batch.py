"""``append_batch`` on PostgreSQL: a transcript import's batch in one transaction, one
pipelined ``executemany`` per table (rows built in :mod:`mnesis.store.shared.batch`)."""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.models.clock import now_ms
from mnesis.store.base import AppendedMessage, NewMessage
from mnesis.store.postgres.chain import extend_chain
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import (
    execute_many,
    fetch,
    lock_session,
    next_value,
)
from mnesis.store.shared.batch import (
    CONTEXT_MESSAGE_INSERT,
    BaseBatch,
    batch_rows,
    encode_batch,
)
from mnesis.store.shared.search_context import NEIGHBOURS_SELECT, Contexts, neighbour_args
from mnesis.store.shared.sql import MESSAGE_INSERT, PART_INSERT, pg

__all__ = ["PostgresBatch"]


class PostgresBatch(BaseBatch[PostgresDatabase]):
    """Batch appends (``PostgresStore.batch``)."""

    async def append_batch(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        prepared = encode_batch(batch)
        now = now_ms()
        sessions = sorted({item.message.session_id for item in batch})

        async def _append(conn: Conn) -> list[AppendedMessage]:
            contexts = Contexts()
            next_seq: dict[str, int] = {}
            next_position: dict[str, int] = {}
            # Sessions locked in one order, so two batches never wait on each other.
            for sid in sessions:
                await lock_session(conn, sid)
                next_seq[sid] = await next_value(conn, "messages", "seq", sid)
                next_position[sid] = await next_value(conn, "context_items", "position", sid)
                neighbours = await fetch(
                    conn, pg(NEIGHBOURS_SELECT), neighbour_args(sid, next_seq[sid])
                )
                contexts.start(sid, next_seq[sid], neighbours)
            rows = batch_rows(
                prepared, next_seq, next_position, now, summary_flag=bool, contexts=contexts
            )
            await execute_many(conn, pg(MESSAGE_INSERT), rows.messages)
            await execute_many(conn, pg(PART_INSERT), rows.parts)
            await execute_many(conn, pg(CONTEXT_MESSAGE_INSERT), rows.context)
            if self.db.chained:
                await extend_chain(conn, rows.links)
            return rows.appended

        return await self.db.write(_append)
