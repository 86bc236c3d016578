"""What the parts of the SQLite store share: select lists, write helpers and :func:`ids_in`
(row decoders and statements both backends use live in :mod:`mnesis.store.shared`).

The helpers that take a ``sqlite3.Connection`` run on the database's worker thread,
inside the read or write transaction of their caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from mnesis.errors import SessionNotFoundError
from mnesis.models.message import MessageWithParts
from mnesis.store.base import FileReference, SessionRecord
from mnesis.store.codec import dumps
from mnesis.store.shared import sessions
from mnesis.store.shared import sql as statements
from mnesis.store.shared.purge import SESSION_EXISTS
from mnesis.store.shared.rows import (
    attach_parts,
    messages_of,
)

__all__ = ["ids_in", "insert_session"]

_MSG_COLS = statements.select_list(statements.MESSAGE_COLUMNS)
_PART_COLS = statements.select_list(statements.PART_COLUMNS)


def _load_messages(
    conn: sqlite3.Connection, msg_rows: list[Any], part_sql: str, part_args: Sequence[Any]
) -> list[MessageWithParts]:
    by_id = messages_of(msg_rows)
    return attach_parts(by_id, conn.execute(part_sql, part_args).fetchall() if by_id else [])


def _next_value(conn: sqlite3.Connection, table: str, column: str, session_id: str) -> int:
    """The next ``seq`` / ``position`` of a session (an index lookup on its maximum)."""
    row = conn.execute(
        f"SELECT COALESCE(MAX({column}), 0) + 1 FROM {table} WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return int(row[0])


def _get_file(conn: sqlite3.Connection, key: str) -> FileReference | None:
    row = conn.execute(statements.FILE_SELECT, (key, key)).fetchone()
    return None if row is None else FileReference(*row)


def ids_in(column: str, ids: Sequence[str]) -> tuple[str, Any]:
    """The clause "``column`` is one of ``ids``" (one ``?``: a JSON array read back with
    ``json_each``) and its argument."""
    return f"{column} IN (SELECT value FROM json_each(?))", dumps(list(ids))


def insert_session(conn: sqlite3.Connection, record: SessionRecord, now: int) -> None:
    """Insert a new session's row (its timestamps default to ``now``); raises
    ``SessionNotFoundError`` if its parent does not exist. Inside the caller's write
    transaction."""
    record.created_at = record.created_at or now
    record.updated_at = record.updated_at or now
    if (
        record.parent_id is not None
        and not conn.execute(SESSION_EXISTS, (record.parent_id,)).fetchone()
    ):
        raise SessionNotFoundError(record.parent_id)
    conn.execute(sessions.SESSION_INSERT, sessions.session_row(record))
