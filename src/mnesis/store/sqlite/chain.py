"""The hash chain on SQLite (see :mod:`~mnesis.store.shared.chain`): extending it inside
a write transaction, reading it for a check."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnesis.store.records import ChainHead, ChainReport
from mnesis.store.shared.chain import HEAD_SELECT, LINK_INSERT, Link, chain_links
from mnesis.store.shared.chain_check import chain_reads, check_chain

__all__ = ["extend_chain", "has_chain", "read_chain"]

_READS = chain_reads(lambda column: f"CAST({column} AS BLOB)")


def extend_chain(conn: sqlite3.Connection, links: Sequence[Link]) -> None:
    """Append ``links`` to their sessions' chains (inside the caller's write
    transaction, which holds the database's write lock: no other writer can move a
    head between the read and the insert)."""
    if not links:
        return
    heads: dict[str, tuple[int, bytes]] = {}
    for sid in dict.fromkeys(link[0] for link in links):
        row = conn.execute(HEAD_SELECT, (sid,)).fetchone()
        if row is not None:
            heads[sid] = (int(row[0]), bytes(row[1]))
    conn.executemany(LINK_INSERT, chain_links(heads, links))


def has_chain(conn: sqlite3.Connection) -> bool:
    """Whether the file has the chain's table (m011 applied)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'history_chain'")
    return found.fetchone() is not None


def read_chain(
    conn: sqlite3.Connection, session_id: str, expect: bytes | None = None
) -> ChainReport:
    """A session's chain, checked (in the caller's read transaction)."""
    if not has_chain(conn):
        last = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        return ChainReport(ChainHead(session_id, 0, "", int(last)), available=False)
    rows = [conn.execute(sql, (session_id,) * sql.count("?")).fetchall() for sql in _READS]
    return check_chain(session_id, (rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]), expect)
