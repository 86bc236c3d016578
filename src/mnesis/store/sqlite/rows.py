"""What the parts of the SQLite store share: column lists, row decoders, write helpers
and :class:`SQLiteStoreBase`, which gives each part its database.

The helpers that take a ``sqlite3.Connection`` run on the database's worker thread,
inside the read or write transaction of their caller.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mnesis.errors import MessageNotFoundError
from mnesis.models.message import Message, MessageWithParts
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import FileReference, SessionRecord, SummaryRecord
from mnesis.store.codec import decode_part, loads_column, make_message

if TYPE_CHECKING:
    from mnesis.store.sqlite.database import SQLiteDatabase

__all__ = ["SQLiteStoreBase"]

_MSG_COLS = (
    "id, session_id, role, created_at, agent, model_id, provider_id, is_summary, parent_id, "
    "tokens_input, tokens_output, tokens_cache_read, tokens_cache_write, tokens_total, cost, "
    "finish_reason, token_estimate"
)
_MSG_KEYS = [c.strip() for c in _MSG_COLS.split(",")]
_PART_COLS = "id, message_id, content, tool_state, compacted_at, started_at, completed_at"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _session(row: Sequence[Any]) -> SessionRecord:
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


def _summary(row: Sequence[Any]) -> SummaryRecord:
    return SummaryRecord(
        id=row[0],
        session_id=row[1],
        kind=row[2],
        depth=row[3],
        level=row[4],
        content=row[5],
        token_count=row[6],
        file_ids=loads_column(row[7], "summaries", row[0], "file_ids"),
        message_id=row[8],
        span_start_message_id=row[9],
        span_end_message_id=row[10],
        source_message_count=row[11],
        created_at=row[12],
    )


_SESSION_COLS = (
    "id, model, agent, parent_id, system_prompt, title, status, created_at, updated_at, config"
)
_SUMMARY_COLS = (
    "id, session_id, kind, depth, level, content, token_count, file_ids, message_id, "
    "span_start_message_id, span_end_message_id, source_message_count, created_at"
)


def _load_messages(
    conn: sqlite3.Connection, msg_rows: list[Any], part_sql: str, part_args: Sequence[Any]
) -> list[MessageWithParts]:
    by_id: dict[str, MessageWithParts] = {}
    ordered: list[MessageWithParts] = []
    for row in msg_rows:
        mwp = MessageWithParts.model_construct(
            message=make_message(**dict(zip(_MSG_KEYS, row, strict=True))), parts=[]
        )
        by_id[row[0]] = mwp
        ordered.append(mwp)
    if ordered:
        for prow in conn.execute(part_sql, part_args):
            target = by_id.get(prow[1])
            if target is not None:
                target.parts.append(decode_part(prow[0], prow[2], *prow[3:7]))
    return ordered


_DOWN_CTE = (
    "WITH RECURSIVE down(id) AS (SELECT ? UNION SELECT sp.parent_summary_id "
    "FROM summary_parents sp JOIN down ON sp.summary_id = down.id)"
)


def _message_update(
    tokens: TokenUsage | None,
    cost: float | None,
    finish_reason: str | None,
    token_estimate: int | None,
) -> Callable[[sqlite3.Connection, str], None] | None:
    """The permitted mutation of a message row (and its context item's tokens), to run
    inside a write transaction; None when there is nothing to change."""
    sets: list[str] = []
    args: list[Any] = []
    if tokens is not None:
        sets.append(
            "tokens_input = ?, tokens_output = ?, tokens_cache_read = ?, "
            "tokens_cache_write = ?, tokens_total = ?"
        )
        args += [
            tokens.input,
            tokens.output,
            tokens.cache_read,
            tokens.cache_write,
            tokens.effective_total(),
        ]
    if cost is not None:
        sets.append("cost = ?")
        args.append(cost)
    if finish_reason is not None:
        sets.append("finish_reason = ?")
        args.append(str(finish_reason))
    if token_estimate is not None:
        sets.append("token_estimate = ?")
        args.append(token_estimate)
    if not sets:
        return None

    def _update(conn: sqlite3.Connection, message_id: str) -> None:
        cur = conn.execute(
            f"UPDATE messages SET {', '.join(sets)} WHERE id = ?", (*args, message_id)
        )
        if cur.rowcount == 0:
            raise MessageNotFoundError(message_id)
        if token_estimate is not None:
            conn.execute(
                "UPDATE context_items SET tokens = ? WHERE message_id = ?",
                (token_estimate, message_id),
            )

    return _update


_PART_INSERT = (
    "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
    "text_content, tool_name, tool_call_id, tool_state, compacted_at, started_at, "
    "completed_at, token_estimate, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _next_value(conn: sqlite3.Connection, table: str, column: str, session_id: str) -> int:
    """The next ``seq`` / ``position`` of a session (an index lookup on its maximum)."""
    row = conn.execute(
        f"SELECT COALESCE(MAX({column}), 0) + 1 FROM {table} WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return int(row[0])


def _insert_message(conn: sqlite3.Connection, m: Message, seq: int) -> None:
    """Insert one ``messages`` row."""
    t = m.tokens or TokenUsage()
    conn.execute(
        f"INSERT INTO messages ({_MSG_COLS}, seq) VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            m.id,
            m.session_id,
            m.role,
            m.created_at,
            m.agent,
            m.model_id,
            m.provider_id,
            int(m.is_summary),
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


def _insert_parts(
    conn: sqlite3.Connection,
    message_id: str,
    session_id: str,
    first_ordinal: int,
    rows: Sequence[tuple[str, int, dict[str, Any]]],
    now: int,
) -> None:
    """Insert encoded parts ``(part_id, token_estimate, columns)`` of one message."""
    conn.executemany(
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


def _get_file(conn: sqlite3.Connection, key: str) -> FileReference | None:
    row = conn.execute(
        "SELECT content_id, file_id, path, file_type, token_count, exploration_summary, "
        "byte_size, session_id, created_at FROM file_references "
        "WHERE content_id = ? OR file_id = ?",
        (key, key),
    ).fetchone()
    if row is None:
        return None
    return FileReference(*row)


class SQLiteStoreBase:
    """The database every part of :class:`~mnesis.store.sqlite.SQLiteStore` works on."""

    db: SQLiteDatabase

    async def _first_column(self, sql: str, args: Sequence[Any]) -> list[str]:
        """The first column of every row of a read query."""
        return await self.db.read(lambda conn: [r[0] for r in conn.execute(sql, args)])
