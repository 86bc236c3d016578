"""What the parts of the PostgreSQL store share: column lists, row decoders, write
helpers and :func:`ids_in`.

The helpers that take a connection run inside the read or write transaction of their
caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.errors import SessionNotFoundError
from mnesis.models.clock import now_ms
from mnesis.models.message import MessageWithParts
from mnesis.store.base import FileReference
from mnesis.store.postgres.db import Conn
from mnesis.store.shared.rows import (
    attach_parts,
    messages_of,
)
from mnesis.store.shared.sql import DOWN_CTE as SHARED_DOWN_CTE
from mnesis.store.shared.sql import (
    FILE_SELECT,
    MESSAGE_COLUMNS,
    PART_COLUMNS,
    pg,
    select_list,
)

__all__ = ["ids_in", "now_ms"]

MSG_COLS = select_list(MESSAGE_COLUMNS, as_text=("role",))
PART_COLS = select_list(PART_COLUMNS, as_text=("tool_state", "part_type"))
DOWN_CTE = pg(SHARED_DOWN_CTE)
"""Every summary below (and including) a summary, through the condensation levels."""


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
    by_id = messages_of(msg_rows)
    part_rows = (
        await fetch(
            conn,
            f"SELECT {PART_COLS} FROM message_parts WHERE message_id = ANY(%s) "
            "ORDER BY message_id, ordinal",
            (list(by_id),),
        )
        if by_id
        else []
    )
    return attach_parts(by_id, part_rows)


LOCK_SESSION = "SELECT 1 FROM sessions WHERE id = %s FOR NO KEY UPDATE"
"""The session's row lock of :func:`lock_session` (no row: no such session)."""


async def lock_session(conn: Conn, session_id: str) -> None:
    """Serialise this transaction's writes with every other write to the session (row
    lock on the session; other sessions are unaffected); raises if it does not exist."""
    row = await fetch_one(conn, LOCK_SESSION, (session_id,))
    if row is None:
        raise SessionNotFoundError(session_id)


async def next_value(conn: Conn, table: str, column: str, session_id: str) -> int:
    """The next ``seq`` / ``position`` of a session (an index lookup on its maximum)."""
    row = await fetch_one(
        conn,
        f"SELECT COALESCE(MAX({column}), 0) + 1 FROM {table} WHERE session_id = %s",
        (session_id,),
    )
    assert row is not None
    return int(row[0])


async def get_file(conn: Conn, key: str) -> FileReference | None:
    row = await fetch_one(conn, pg(FILE_SELECT), (key, key))
    return None if row is None else FileReference(*row)


def ids_in(column: str, ids: Sequence[str]) -> tuple[str, Any]:
    """The clause "``column`` is one of ``ids``" (one ``?``: a ``text[]``) and its
    argument."""
    return f"{column} = ANY(?)", list(ids)
