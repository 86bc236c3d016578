"""What the parts of the PostgreSQL store share: column lists, row decoders, write
helpers and :class:`PostgresStoreBase`, which gives each part its database.

The helpers that take a connection run inside the read or write transaction of their
caller.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mnesis.errors import MessageNotFoundError, SessionNotFoundError
from mnesis.models.message import Message, MessageWithParts
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import FileReference, SessionRecord, SummaryRecord
from mnesis.store.codec import decode_part, loads_column, make_message
from mnesis.store.postgres.db import Conn, PostgresDatabase

__all__ = ["PostgresStoreBase"]

MSG_COLS = (
    "id, session_id, role::text, created_at, agent, model_id, provider_id, is_summary, "
    "parent_id, tokens_input, tokens_output, tokens_cache_read, tokens_cache_write, "
    "tokens_total, cost, finish_reason, token_estimate"
)
_MSG_KEYS = [c.strip().removesuffix("::text") for c in MSG_COLS.split(",")]
PART_COLS = "id, message_id, content, tool_state::text, compacted_at, started_at, completed_at"
SESSION_COLS = (
    "id, model, agent, parent_id, system_prompt, title, status, created_at, updated_at, config"
)
SUMMARY_COLS = (
    "id, session_id, kind::text, depth, level, content, token_count, file_ids, message_id, "
    "span_start_message_id, span_end_message_id, source_message_count, created_at"
)
DOWN_CTE = (
    "WITH RECURSIVE down(id) AS (SELECT %s::text UNION SELECT sp.parent_summary_id "
    "FROM summary_parents sp JOIN down ON sp.summary_id = down.id)"
)
"""Every summary below (and including) a summary, through the condensation levels."""


def now_ms() -> int:
    return int(time.time() * 1000)


def session_record(row: Sequence[Any]) -> SessionRecord:
    return SessionRecord(
        id=row[0],
        model=row[1],
        agent=row[2],
        parent_id=row[3],
        system_prompt=row[4],
        title=row[5],
        status=row[6],
        created_at=row[7],
        updated_at=row[8],
        config=loads_column(row[9], "sessions", row[0], "config") if row[9] else None,
    )


def summary_record(row: Sequence[Any]) -> SummaryRecord:
    return SummaryRecord(
        id=row[0],
        session_id=row[1],
        kind=row[2],
        depth=row[3],
        level=row[4],
        content=row[5],
        token_count=row[6],
        file_ids=list(row[7]),
        message_id=row[8],
        span_start_message_id=row[9],
        span_end_message_id=row[10],
        source_message_count=row[11],
        created_at=row[12],
    )


async def fetch(conn: Conn, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row of a query."""
    cur = await conn.execute(sql, args)
    return await cur.fetchall()


async def fetch_one(conn: Conn, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
    """The first row of a query, if any."""
    cur = await conn.execute(sql, args)
    return await cur.fetchone()


async def execute_many(conn: Conn, sql: str, rows: Sequence[Sequence[Any]]) -> None:
    """One statement over many parameter rows (pipelined by psycopg)."""
    if not rows:
        return
    async with conn.cursor() as cur:
        await cur.executemany(sql, rows)


async def load_messages(conn: Conn, msg_rows: Sequence[Sequence[Any]]) -> list[MessageWithParts]:
    """Messages of ``msg_rows`` (in that order) with their parts."""
    by_id: dict[str, MessageWithParts] = {}
    ordered: list[MessageWithParts] = []
    for row in msg_rows:
        mwp = MessageWithParts.model_construct(
            message=make_message(**dict(zip(_MSG_KEYS, row, strict=True))), parts=[]
        )
        by_id[row[0]] = mwp
        ordered.append(mwp)
    if ordered:
        for prow in await fetch(
            conn,
            f"SELECT {PART_COLS} FROM message_parts WHERE message_id = ANY(%s) "
            "ORDER BY message_id, ordinal",
            (list(by_id),),
        ):
            by_id[prow[1]].parts.append(decode_part(prow[0], prow[2], *prow[3:7]))
    return ordered


async def lock_session(conn: Conn, session_id: str) -> None:
    """Serialise this transaction's writes with every other write to the session (row
    lock on the session; other sessions are unaffected); raises if it does not exist."""
    row = await fetch_one(
        conn, "SELECT 1 FROM sessions WHERE id = %s FOR NO KEY UPDATE", (session_id,)
    )
    if row is None:
        raise SessionNotFoundError(session_id)


def message_update(
    tokens: TokenUsage | None,
    cost: float | None,
    finish_reason: str | None,
    token_estimate: int | None,
) -> Callable[[Conn, str], Awaitable[None]] | None:
    """The permitted mutation of a message row (and its context item's tokens), to run
    inside a write transaction; None when there is nothing to change."""
    sets: list[str] = []
    args: list[Any] = []
    if tokens is not None:
        sets.append(
            "tokens_input = %s, tokens_output = %s, tokens_cache_read = %s, "
            "tokens_cache_write = %s, tokens_total = %s"
        )
        args += [
            tokens.input,
            tokens.output,
            tokens.cache_read,
            tokens.cache_write,
            tokens.effective_total(),
        ]
    if cost is not None:
        sets.append("cost = %s")
        args.append(cost)
    if finish_reason is not None:
        sets.append("finish_reason = %s")
        args.append(str(finish_reason))
    if token_estimate is not None:
        sets.append("token_estimate = %s")
        args.append(token_estimate)
    if not sets:
        return None

    async def _update(conn: Conn, message_id: str) -> None:
        cur = await conn.execute(
            f"UPDATE messages SET {', '.join(sets)} WHERE id = %s",
            (*args, message_id),
        )
        if cur.rowcount == 0:
            raise MessageNotFoundError(message_id)
        if token_estimate is not None:
            await conn.execute(
                "UPDATE context_items SET tokens = %s WHERE message_id = %s",
                (token_estimate, message_id),
            )

    return _update


async def next_value(conn: Conn, table: str, column: str, session_id: str) -> int:
    """The next ``seq`` / ``position`` of a session (an index lookup on its maximum)."""
    row = await fetch_one(
        conn,
        f"SELECT COALESCE(MAX({column}), 0) + 1 FROM {table} WHERE session_id = %s",
        (session_id,),
    )
    assert row is not None
    return int(row[0])


async def insert_message(conn: Conn, m: Message, seq: int) -> None:
    """Insert one ``messages`` row."""
    t = m.tokens or TokenUsage()
    await conn.execute(
        f"INSERT INTO messages ({MSG_COLS.replace('::text', '')}, seq) VALUES "
        "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            m.id,
            m.session_id,
            m.role,
            m.created_at,
            m.agent,
            m.model_id,
            m.provider_id,
            bool(m.is_summary),
            m.parent_id,
            t.input,
            t.output,
            t.cache_read,
            t.cache_write,
            t.effective_total(),
            m.cost,
            m.finish_reason,
            m.token_estimate,
            seq,
        ),
    )


_PART_INSERT = (
    "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
    "text_content, tool_name, tool_call_id, tool_state, compacted_at, started_at, "
    "completed_at, token_estimate, created_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


async def insert_parts(
    conn: Conn,
    message_id: str,
    session_id: str,
    first_ordinal: int,
    rows: Sequence[tuple[str, int, dict[str, Any]]],
    now: int,
) -> None:
    """Insert encoded parts ``(part_id, token_estimate, columns)`` of one message."""
    await execute_many(
        conn,
        _PART_INSERT,
        [
            (
                pid,
                message_id,
                session_id,
                first_ordinal + offset,
                r["part_type"],
                r["content"],
                r["text_content"],
                r["tool_name"],
                r["tool_call_id"],
                r["tool_state"],
                r["compacted_at"],
                r["started_at"],
                r["completed_at"],
                est,
                now,
            )
            for offset, (pid, est, r) in enumerate(rows)
        ],
    )


async def get_file(conn: Conn, key: str) -> FileReference | None:
    row = await fetch_one(
        conn,
        "SELECT content_id, file_id, path, file_type, token_count, exploration_summary, "
        "byte_size, session_id, created_at FROM file_references "
        "WHERE content_id = %s OR file_id = %s",
        (key, key),
    )
    return None if row is None else FileReference(*row)


class PostgresStoreBase:
    """The database every part of :class:`~mnesis.store.postgres.PostgresStore` works on."""

    db: PostgresDatabase

    async def _first_column(self, sql: str, args: Sequence[Any]) -> list[str]:
        """The first column of every row of a read query."""

        async def _read(conn: Conn) -> list[str]:
            return [r[0] for r in await fetch(conn, sql, args)]

        return await self.db.read(_read)
