"""Messages and their parts in SQLite: appends, the permitted updates, reads
(``SQLiteStore.messages``)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence

from mnesis.errors import (
    MessageNotFoundError,
    SessionNotFoundError,
    StoreBusyError,
    StoreReadOnlyError,
)
from mnesis.models.clock import now_ms
from mnesis.models.message import Message, MessageWithParts
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import AppendedMessage, NewMessage
from mnesis.store.codec import (
    dumps,
    usage_from_sums,
)
from mnesis.store.shared.chain import Link, message_link, part_link
from mnesis.store.shared.messages import (
    BaseMessages,
    MessageRowChange,
    message_changes,
    part_status_select,
)
from mnesis.store.shared.rows import (
    EncodedParts,
    message_row,
    part_rows,
)
from mnesis.store.shared.search_context import (
    NEIGHBOURS_SELECT,
    Contexts,
    NeighbourCache,
    neighbour_args,
)
from mnesis.store.shared.sql import MESSAGE_INSERT
from mnesis.store.shared.usage import UPSERT, Kept, kept_usage, usage_of, usage_read
from mnesis.store.sqlite.chain import extend_chain
from mnesis.store.sqlite.context_slots import message_slot_insert
from mnesis.store.sqlite.context_slots import next_position as next_position_of
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.fts_index import insert_indexed_parts
from mnesis.store.sqlite.rows import (
    _MSG_COLS,
    _PART_COLS,
    _load_messages,
    _next_value,
)

__all__ = ["SQLiteMessages"]

# TOTAL, not SUM: SUM raises "integer overflow" past 2**63 - 1.
_USAGE_READ = usage_read("TOTAL")


def _plain_usage(conn: sqlite3.Connection, session_id: str) -> TokenUsage:
    """The usage of every message of the session, summed now (no kept sums)."""
    row = conn.execute(
        "SELECT TOTAL(tokens_input), TOTAL(tokens_output), TOTAL(tokens_cache_read), "
        "TOTAL(tokens_cache_write), TOTAL(tokens_total) FROM messages WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return usage_from_sums(row)


def _last_part_key(conn: sqlite3.Connection) -> int | None:
    """The highest ``message_parts`` rowid (the neighbour cache's watermark)."""
    value = conn.execute("SELECT MAX(rowid) FROM message_parts").fetchone()[0]
    return None if value is None else int(value)


def _set_contexts(
    conn: sqlite3.Connection, contexts: Contexts, m: Message, seq: int, rows: EncodedParts
) -> None:
    """Set the ``search_context`` of a message's encoded parts (reads its neighbours
    when the store's cache does not know them)."""
    if contexts.needs(m.session_id, seq):
        found = conn.execute(NEIGHBOURS_SELECT, neighbour_args(m.session_id, seq)).fetchall()
        contexts.start(m.session_id, seq, found)
    contexts.apply(m.session_id, seq, m.role, m.created_at, m.is_summary, rows)


class SQLiteMessages(BaseMessages[SQLiteDatabase]):
    """Appending, updating and reading messages and parts (``SQLiteStore.messages``)."""

    ROW_KEY = "rowid"
    MESSAGE_LOCK = "SELECT 1 FROM messages WHERE id = ?"
    PART_STATUS_SELECT = part_status_select()

    def __init__(self, db: SQLiteDatabase) -> None:
        super().__init__(db)
        self.neighbours = NeighbourCache()
        """The last turns of the sessions this store appended to (a part's
        ``search_context`` is computed from them without a read)."""

    async def _append_messages(
        self, prepared: Sequence[tuple[NewMessage, EncodedParts]], now: int
    ) -> list[AppendedMessage]:
        contexts = Contexts(self.neighbours)

        def _append(conn: sqlite3.Connection) -> list[AppendedMessage]:
            out: list[AppendedMessage] = []
            # One MAX lookup per session and batch; later rows of the batch count on.
            next_seq: dict[str, int] = {}
            next_position: dict[str, int] = {}
            contexts.check(_last_part_key(conn))
            links: list[Link] = []
            for item, rows in prepared:
                m = item.message
                if m.session_id not in next_seq:
                    next_seq[m.session_id] = _next_value(conn, "messages", "seq", m.session_id)
                seq = next_seq[m.session_id]
                next_seq[m.session_id] += 1
                _set_contexts(conn, contexts, m, seq, rows)
                message = message_row(m, seq, int(m.is_summary))
                try:
                    conn.execute(MESSAGE_INSERT, message)
                except sqlite3.IntegrityError as exc:
                    if "FOREIGN KEY" in str(exc):
                        raise SessionNotFoundError(m.session_id) from exc
                    raise
                parts = part_rows(m.id, m.session_id, 0, rows, now)
                insert_indexed_parts(conn, parts)
                links.append(message_link(message))
                links += map(part_link, parts)
                position = None
                if item.in_context:
                    if m.session_id not in next_position:
                        next_position[m.session_id] = next_position_of(
                            conn, m.session_id, keys=self.db.context_keys
                        )
                    position = next_position[m.session_id]
                    next_position[m.session_id] += 1
                    conn.execute(
                        message_slot_insert(self.db.context_keys),
                        (m.session_id, position, m.id, m.token_estimate, now),
                    )
                out.append(AppendedMessage(m.id, seq, position, tuple(r[0] for r in rows)))
            if self.db.chained:
                extend_chain(conn, links)
            contexts.finish(_last_part_key(conn))
            return out

        appended = await self.db.write(_append)
        contexts.commit()
        return appended

    async def _append_parts(
        self, message_id: str, rows: EncodedParts, change: MessageRowChange
    ) -> list[str]:
        now = now_ms()

        def _append(conn: sqlite3.Connection) -> list[str]:
            found = conn.execute(
                "SELECT session_id, seq, role, created_at, is_summary FROM messages WHERE id = ?",
                (message_id,),
            ).fetchone()
            if found is None:
                raise MessageNotFoundError(message_id)
            contexts = Contexts()
            neighbours = conn.execute(NEIGHBOURS_SELECT, neighbour_args(found[0], found[1]))
            contexts.start(found[0], found[1], neighbours.fetchall())
            contexts.apply(found[0], found[1], found[2], found[3], bool(found[4]), rows)
            first = conn.execute(
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM message_parts WHERE message_id = ?",
                (message_id,),
            ).fetchone()[0]
            parts = part_rows(message_id, found[0], first, rows, now)
            insert_indexed_parts(conn, parts)
            if self.db.chained:
                extend_chain(conn, [part_link(r) for r in parts])
            for sql, args in message_changes(message_id, change, kept=self.db.usage_kept):
                conn.execute(sql, args)
            return [r[0] for r in rows]

        # The new parts move the part-rowid watermark: the cache is not trusted next time.
        return await self.db.write(_append)

    async def _messages(
        self, session_id: str, summaries: bool, after_seq: int, limit: int | None
    ) -> list[MessageWithParts]:
        summary_clause = "" if summaries else " AND is_summary = 0"
        lim = -1 if limit is None else int(limit)

        def _get(conn: sqlite3.Connection) -> list[MessageWithParts]:
            rows = conn.execute(
                f"SELECT {_MSG_COLS} FROM messages WHERE session_id = ? AND seq > ?"
                f"{summary_clause} ORDER BY seq LIMIT ?",
                (session_id, after_seq, lim),
            ).fetchall()
            if not rows:
                return []
            ids = dumps([r[0] for r in rows])
            return _load_messages(
                conn,
                rows,
                f"SELECT {_PART_COLS} FROM message_parts WHERE message_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY message_id, ordinal",
                (ids,),
            )

        return await self.db.read(_get)

    async def get_messages_by_ids(self, message_ids: Sequence[str]) -> list[MessageWithParts]:
        if not message_ids:
            return []
        ids = dumps(list(message_ids))

        def _get(conn: sqlite3.Connection) -> list[MessageWithParts]:
            rows = conn.execute(
                f"SELECT {_MSG_COLS} FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                (ids,),
            ).fetchall()
            found = _load_messages(
                conn,
                rows,
                f"SELECT {_PART_COLS} FROM message_parts WHERE message_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY message_id, ordinal",
                (ids,),
            )
            by_id = {m.message.id: m for m in found}
            return [by_id[i] for i in message_ids if i in by_id]

        return await self.db.read(_get)

    async def session_token_usage(self, session_id: str) -> TokenUsage:
        if not self.db.usage_kept:  # a file opened read-only that predates m015
            return await self.db.read(lambda conn: _plain_usage(conn, session_id))

        def _read(conn: sqlite3.Connection) -> Kept:
            return kept_usage(conn.execute(_USAGE_READ, (session_id,) * 3).fetchone())

        def _refresh(conn: sqlite3.Connection) -> Kept:
            upto, sums = _read(conn)
            if upto is not None:
                conn.execute(UPSERT, (session_id, upto, *sums))
            return upto, sums

        upto, sums = await self.db.read(_read)
        if upto is not None:
            # Keeping the sums is for the next load: on a read-only file, or while
            # another connection holds the write lock (not waited for), the sums just
            # read are the answer.
            with contextlib.suppress(StoreReadOnlyError, StoreBusyError):
                upto, sums = await self.db.write_if_free(_refresh)
        return usage_of(sums)
