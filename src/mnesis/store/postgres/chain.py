"""The hash chain on PostgreSQL (see :mod:`~mnesis.store.shared.chain`): extending it
inside a write transaction, reading it for a check."""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import execute_many, fetch, fetch_one
from mnesis.store.records import ChainReport
from mnesis.store.shared.chain import HEAD_SELECT, LINK_INSERT, Link, chain_links
from mnesis.store.shared.chain_check import chain_reads, check_chain
from mnesis.store.shared.sql import pg

__all__ = ["extend_chain", "read_chain"]

READS = [pg(sql) for sql in chain_reads(lambda column: f"{column}::text")]
"""The reads of a chain check (enums and JSON read as their text)."""

_HEAD = pg(HEAD_SELECT)
_INSERT = pg(LINK_INSERT)


async def read_heads(conn: Conn, session_ids: Sequence[str]) -> dict[str, tuple[int, bytes]]:
    """Each session's newest link and its hash (read after the session is locked)."""
    heads: dict[str, tuple[int, bytes]] = {}
    for sid in dict.fromkeys(session_ids):
        row = await fetch_one(conn, _HEAD, (sid,))
        if row is not None:
            heads[sid] = (int(row[0]), bytes(row[1]))
    return heads


async def extend_chain(
    conn: Conn, links: Sequence[Link], heads: dict[str, tuple[int, bytes]] | None = None
) -> None:
    """Append ``links`` to their sessions' chains, inside the caller's transaction,
    which has locked each session (``lock_session``), so no other writer moves a head
    meanwhile; ``heads`` when the caller read them already."""
    if not links:
        return
    if heads is None:
        heads = await read_heads(conn, [link[0] for link in links])
    await execute_many(conn, _INSERT, chain_links(heads, links))


async def read_chain(conn: Conn, session_id: str, expect: bytes | None = None) -> ChainReport:
    """A session's chain, checked (in the caller's snapshot)."""
    rows = [await fetch(conn, sql, (session_id,) * sql.count("%s")) for sql in READS]
    return check_chain(session_id, (rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]), expect)
