"""Messages and their parts in PostgreSQL: appends, the permitted updates, reads
(``PostgresStore.messages``)."""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.errors import MessageNotFoundError, SessionNotFoundError
from mnesis.models.message import MessageWithParts
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import AppendedMessage, NewMessage
from mnesis.store.postgres.chain import extend_chain
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import (
    LOCK_SESSION,
    MSG_COLS,
    execute_many,
    fetch,
    fetch_one,
    load_messages,
    lock_session,
    now_ms,
)
from mnesis.store.shared.chain import HEAD_SELECT, Link, message_link, part_link
from mnesis.store.shared.messages import (
    BaseMessages,
    MessageRowChange,
    message_changes,
    part_status_select,
)
from mnesis.store.shared.rows import EncodedParts, message_row, part_rows
from mnesis.store.shared.search_context import (
    NEIGHBOURS_SELECT,
    WINDOW,
    Contexts,
    neighbour_args,
)
from mnesis.store.shared.sql import MESSAGE_INSERT, PART_INSERT, pg
from mnesis.store.shared.usage import (
    KEPT_SELECT,
    UPSERT,
    Kept,
    kept_usage,
    newer_select,
    usage_of,
)

__all__ = ["PostgresMessages"]

_HEAD = pg(HEAD_SELECT)
_KEPT_SELECT = pg(KEPT_SELECT)
_NEWER_SELECT = pg(newer_select("SUM"))
_UPSERT = pg(UPSERT)
_MESSAGE_INSERT = pg(MESSAGE_INSERT)
_PART_INSERT = pg(PART_INSERT)


_NEXT_SEQ_AND_POSITION = (
    "SELECT (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = %s), "
    "(SELECT COALESCE(MAX(position), 0) + 1 FROM context_items WHERE session_id = %s)"
)
_SEQ_BOUNDS = "nm.seq < ? AND nm.seq >= ?"
assert _SEQ_BOUNDS in NEIGHBOURS_SELECT
_LATEST_NEIGHBOURS = pg(
    NEIGHBOURS_SELECT.replace(
        _SEQ_BOUNDS,
        f"nm.seq > (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?) - {WINDOW}",
    )
)
""":data:`NEIGHBOURS_SELECT` for the message appended next (args: the session twice)."""


class PostgresMessages(BaseMessages[PostgresDatabase]):
    """Appending, updating and reading messages and parts (``PostgresStore.messages``)."""

    ROW_KEY = "key"
    MESSAGE_LOCK = (
        "SELECT 1 FROM sessions WHERE id = (SELECT session_id FROM messages WHERE id = ?) "
        "FOR NO KEY UPDATE"
    )
    """Locks the message's session (then the message, by its update): a change of its
    usage is serialised with a read that stores the session's sums (and with appends)."""
    PART_STATUS_SELECT = part_status_select(
        as_text=("part_type", "tool_state"),
        lock=" AND p.session_id = s.id FOR UPDATE OF p FOR NO KEY UPDATE OF s",
    ).replace("FROM message_parts p", "FROM message_parts p, sessions s")
    """Locks the part and its session: a settled result's chain link is appended after
    the session's head, which no other writer can move meanwhile."""

    async def _append_messages(
        self, prepared: Sequence[tuple[NewMessage, EncodedParts]], now: int
    ) -> list[AppendedMessage]:
        # No cache here: another writer's parts could not be noticed without a query.
        contexts = Contexts()

        async def _append(conn: Conn) -> list[AppendedMessage]:
            # Sessions locked in one order, so two batches never wait on each other.
            next_seq: dict[str, int] = {}
            next_position: dict[str, int] = {}
            heads: dict[str, tuple[int, bytes]] = {}
            chained = self.db.chained
            for session_id in sorted({item.message.session_id for item, _rows in prepared}):
                # One round trip: the server runs them in order, each statement (READ
                # COMMITTED) seeing what committed before the lock was granted.
                async with conn.pipeline():
                    locked = await conn.execute(LOCK_SESSION, (session_id,))
                    counters = await conn.execute(_NEXT_SEQ_AND_POSITION, (session_id,) * 2)
                    latest = await conn.execute(_LATEST_NEIGHBOURS, (session_id,) * 2)
                    head = await conn.execute(_HEAD, (session_id,)) if chained else None
                if await locked.fetchone() is None:
                    raise SessionNotFoundError(session_id)
                found_head = None if head is None else await head.fetchone()
                if found_head is not None:
                    heads[session_id] = (int(found_head[0]), bytes(found_head[1]))
                row = await counters.fetchone()
                assert row is not None
                next_seq[session_id], next_position[session_id] = int(row[0]), int(row[1])
                contexts.start(session_id, next_seq[session_id], await latest.fetchall())
            out: list[AppendedMessage] = []
            links: list[Link] = []
            # The inserts need no answer: one pipeline, one round trip for the batch.
            async with conn.pipeline():
                for item, rows in prepared:
                    m = item.message
                    seq = next_seq[m.session_id]
                    next_seq[m.session_id] += 1
                    contexts.apply(m.session_id, seq, m.role, m.created_at, m.is_summary, rows)
                    message = message_row(m, seq, bool(m.is_summary))
                    parts = part_rows(m.id, m.session_id, 0, rows, now)
                    await conn.execute(_MESSAGE_INSERT, message)
                    await execute_many(conn, _PART_INSERT, parts)
                    links.append(message_link(message))
                    links += map(part_link, parts)
                    position = None
                    if item.in_context:
                        position = next_position[m.session_id]
                        next_position[m.session_id] += 1
                        await conn.execute(
                            "INSERT INTO context_items (session_id, position, item_type, "
                            "message_id, tokens, created_at) "
                            "VALUES (%s, %s, 'message', %s, %s, %s)",
                            (m.session_id, position, m.id, m.token_estimate, now),
                        )
                    out.append(AppendedMessage(m.id, seq, position, tuple(r[0] for r in rows)))
                if chained:
                    await extend_chain(conn, links, heads)
            return out

        return await self.db.write(_append)

    async def _append_parts(
        self, message_id: str, rows: EncodedParts, change: MessageRowChange
    ) -> list[str]:
        now = now_ms()

        async def _append(conn: Conn) -> list[str]:
            found = await fetch_one(
                conn,
                "SELECT session_id, seq, role::text, created_at, is_summary FROM messages "
                "WHERE id = %s",
                (message_id,),
            )
            if found is None:
                raise MessageNotFoundError(message_id)
            await lock_session(conn, found[0])
            contexts = Contexts()
            contexts.start(
                found[0],
                found[1],
                await fetch(conn, pg(NEIGHBOURS_SELECT), neighbour_args(found[0], found[1])),
            )
            contexts.apply(found[0], found[1], found[2], found[3], bool(found[4]), rows)
            first = await fetch_one(
                conn,
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM message_parts WHERE message_id = %s",
                (message_id,),
            )
            assert first is not None
            parts = part_rows(message_id, found[0], first[0], rows, now)
            await execute_many(conn, _PART_INSERT, parts)
            if self.db.chained:
                await extend_chain(conn, [part_link(r) for r in parts])
            for sql, args in message_changes(message_id, change, kept=self.db.usage_kept):
                await conn.execute(pg(sql), args)
            return [r[0] for r in rows]

        return await self.db.write(_append)

    async def _messages(
        self, session_id: str, summaries: bool, after_seq: int, limit: int | None
    ) -> list[MessageWithParts]:
        summary_clause = "" if summaries else " AND NOT is_summary"

        async def _get(conn: Conn) -> list[MessageWithParts]:
            rows = await fetch(
                conn,
                f"SELECT {MSG_COLS} FROM messages WHERE session_id = %s AND seq > %s"
                f"{summary_clause} ORDER BY seq LIMIT %s",
                (session_id, after_seq, limit),
            )
            return await load_messages(conn, rows)

        return await self.db.snapshot(_get)

    async def get_messages_by_ids(self, message_ids: Sequence[str]) -> list[MessageWithParts]:
        if not message_ids:
            return []

        async def _get(conn: Conn) -> list[MessageWithParts]:
            rows = await fetch(
                conn, f"SELECT {MSG_COLS} FROM messages WHERE id = ANY(%s)", (list(message_ids),)
            )
            by_id = {m.message.id: m for m in await load_messages(conn, rows)}
            return [by_id[i] for i in message_ids if i in by_id]

        return await self.db.snapshot(_get)

    async def session_token_usage(self, session_id: str) -> TokenUsage:
        kept = self.db.usage_kept  # False: a database migrated only so far (tests)

        async def _read(conn: Conn) -> Kept:
            # Two statements, not usage_read's one: with the kept seq a value, not a
            # subquery, the planner reads the index range instead of the session's rows.
            found = await fetch_one(conn, _KEPT_SELECT, (session_id,)) if kept else None
            row = found or (None, 0, 0, 0, 0, 0)
            newer = await fetch_one(conn, _NEWER_SELECT, (session_id, row[0] or 0))
            assert newer is not None
            return kept_usage((*row, *newer))

        async def _refresh(conn: Conn) -> Kept:
            # Under the session's lock, as every write of its messages' usage: the sums
            # read next cannot miss a change committed after them.
            if await fetch_one(conn, LOCK_SESSION, (session_id,)) is None:
                return None, [0] * 5
            upto, sums = await _read(conn)
            if upto is not None:
                await conn.execute(_UPSERT, (session_id, upto, *sums))
            return upto, sums

        upto, sums = await self.db.snapshot(_read)
        if upto is not None and kept and not self.db.read_only:
            upto, sums = await self.db.write(_refresh)
        return usage_of(sums)
