"""``append_batch`` on SQLite: a transcript import's batch in one transaction, one
``executemany`` per table (rows built in :mod:`mnesis.store.shared.batch`); the parts
are indexed with the contexts computed for them (see
:mod:`~mnesis.store.sqlite.fts_index`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnesis.errors import SessionNotFoundError
from mnesis.models.clock import now_ms
from mnesis.store.base import AppendedMessage, NewMessage
from mnesis.store.shared.batch import CONTEXT_MESSAGE_INSERT, batch_rows, encode_batch
from mnesis.store.shared.purge import SESSION_EXISTS
from mnesis.store.shared.search_context import NEIGHBOURS_SELECT, Contexts, neighbour_args
from mnesis.store.shared.sql import MESSAGE_INSERT
from mnesis.store.sqlite.fts_index import insert_indexed_parts
from mnesis.store.sqlite.rows import SQLiteStoreBase, _next_value

__all__ = ["BatchMixin"]


class BatchMixin(SQLiteStoreBase):
    """Batch appends (part of ``SQLiteStore``)."""

    async def append_batch(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        prepared = encode_batch(batch)
        now = now_ms()
        sessions = sorted({item.message.session_id for item in batch})

        def _append(conn: sqlite3.Connection) -> list[AppendedMessage]:
            contexts = Contexts()
            next_seq: dict[str, int] = {}
            next_position: dict[str, int] = {}
            for sid in sessions:
                if conn.execute(SESSION_EXISTS, (sid,)).fetchone() is None:
                    raise SessionNotFoundError(sid)
                next_seq[sid] = _next_value(conn, "messages", "seq", sid)
                next_position[sid] = _next_value(conn, "context_items", "position", sid)
                neighbours = conn.execute(NEIGHBOURS_SELECT, neighbour_args(sid, next_seq[sid]))
                contexts.start(sid, next_seq[sid], neighbours.fetchall())
            rows = batch_rows(
                prepared, next_seq, next_position, now, summary_flag=int, contexts=contexts
            )
            conn.executemany(MESSAGE_INSERT, rows.messages)
            insert_indexed_parts(conn, rows.parts)
            conn.executemany(CONTEXT_MESSAGE_INSERT, rows.context)
            return rows.appended

        return await self.db.write(_append)
