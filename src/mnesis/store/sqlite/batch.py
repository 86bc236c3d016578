"""``append_batch`` on SQLite: a transcript import's batch in one transaction, one
``executemany`` per table (rows built in :mod:`mnesis.store.shared.batch`); the parts
are indexed with the contexts computed for them (see
:mod:`~mnesis.store.sqlite.fts_index`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnesis.errors import MnesisStoreError, SessionNotFoundError
from mnesis.models.clock import now_ms
from mnesis.store.base import AppendedMessage, ImportSource, NewMessage, SessionRecord
from mnesis.store.shared.batch import (
    BaseBatch,
    PreparedRows,
    SessionStart,
    batch_links,
    batch_rows,
    encode_batch,
)
from mnesis.store.shared.purge import SESSION_EXISTS, SOURCE_INSERT, source_row
from mnesis.store.shared.search_context import NEIGHBOURS_SELECT, Contexts, neighbour_args
from mnesis.store.shared.sql import MESSAGE_INSERT
from mnesis.store.sqlite.chain import extend_chain
from mnesis.store.sqlite.context_slots import message_slot_insert, next_position
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.fts_index import insert_indexed_parts
from mnesis.store.sqlite.rows import _next_value, ids_in, insert_session

__all__ = ["SQLiteBatch"]

SOURCE_REPLACE = SOURCE_INSERT.replace("INSERT", "INSERT OR REPLACE", 1)


def _session_start(conn: sqlite3.Connection, sid: str, keys: bool) -> SessionStart:
    """Where a session stands: next ``seq``, next position, neighbours of that ``seq``."""
    if conn.execute(SESSION_EXISTS, (sid,)).fetchone() is None:
        raise SessionNotFoundError(sid)
    seq = _next_value(conn, "messages", "seq", sid)
    position = next_position(conn, sid, keys=keys)
    neighbours = conn.execute(NEIGHBOURS_SELECT, neighbour_args(sid, seq))
    return seq, position, [(int(r[0]), str(r[1]), str(r[2])) for r in neighbours]


class SQLiteBatch(BaseBatch[SQLiteDatabase]):
    """Batch appends, and the rows of a batch prepared away from the store
    (``SQLiteStore.batch``)."""

    async def append_batch(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        prepared = encode_batch(batch)
        now = now_ms()
        sessions = sorted({item.message.session_id for item in batch})

        def _append(conn: sqlite3.Connection) -> list[AppendedMessage]:
            contexts = Contexts()
            next_seq: dict[str, int] = {}
            next_position: dict[str, int] = {}
            for sid in sessions:
                next_seq[sid], next_position[sid], neighbours = _session_start(
                    conn, sid, self.db.context_keys
                )
                contexts.start(sid, next_seq[sid], neighbours)
            rows = batch_rows(
                prepared, next_seq, next_position, now, summary_flag=int, contexts=contexts
            )
            conn.executemany(MESSAGE_INSERT, rows.messages)
            insert_indexed_parts(conn, rows.parts)
            conn.executemany(message_slot_insert(self.db.context_keys), rows.context)
            if self.db.chained:
                extend_chain(conn, rows.links)
            return rows.appended

        return await self.db.write(_append)

    async def batch_starts(self, session_ids: Sequence[str]) -> dict[str, SessionStart]:
        """Where each of ``session_ids`` that exists stands, for a
        :class:`~mnesis.store.shared.batch.RowPreparer` that builds the rows of
        :meth:`append_rows` away from the store."""
        ids = list(session_ids)
        if not ids:  # a new file's import: no hand-off to the database's thread
            return {}
        where, arg = ids_in("id", ids)

        def _starts(conn: sqlite3.Connection) -> dict[str, SessionStart]:
            found = {r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE {where}", (arg,))}
            return {
                sid: _session_start(conn, sid, self.db.context_keys) for sid in ids if sid in found
            }

        return await self.db.read(_starts)

    async def append_rows(
        self,
        prepared: PreparedRows,
        *,
        sessions: Sequence[SessionRecord] = (),
        source: ImportSource | None = None,
    ) -> None:
        """Write the rows of a batch built by a
        :class:`~mnesis.store.shared.batch.RowPreparer` (internal: a transcript import's
        parser process) in one transaction, as :meth:`append_batch` writes its own.
        Raises ``MnesisStoreError`` before writing anything if a session does not stand
        where the rows assume (another writer appended to it meanwhile).

        In the same transaction (arguments already checked): ``sessions`` are created
        first (the rows may go to them) and ``source``, the import's progress once the
        batch is written, is stored last, so a small file's import is one commit."""
        now = now_ms()
        if source is not None:
            source.updated_at = now

        def _append(conn: sqlite3.Connection) -> None:
            for record in sessions:
                insert_session(conn, record, now)
            for sid, start in prepared.starts.items():
                found = _session_start(conn, sid, self.db.context_keys)
                if found != start:
                    raise MnesisStoreError(
                        f"session {sid} changed while its rows were prepared "
                        f"(expected seq/position {start[:2]}, found {found[:2]})"
                    )
            rows = prepared.rows
            conn.executemany(MESSAGE_INSERT, rows.messages)
            insert_indexed_parts(conn, rows.parts)
            conn.executemany(message_slot_insert(self.db.context_keys), rows.context)
            if self.db.chained:
                extend_chain(conn, batch_links(rows))
            if source is not None:
                conn.execute(SOURCE_REPLACE, source_row(source))

        await self.db.write(_append)
