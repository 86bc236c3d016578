"""A per-session hash chain over history (PostgreSQL): ``history_chain``.

As on SQLite (``m011_history_chain`` there, which documents the table): one row per
link, append-only (a purge may delete a session's links, as it deletes its rows), and
the rows written before this migration chained here with ``migrated = 1``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnesis.store.shared.chain import LINK_INSERT, chain_links
from mnesis.store.shared.chain_check import chain_reads, session_links
from mnesis.store.shared.sql import pg

if TYPE_CHECKING:  # the database module imports the migrations
    from mnesis.store.postgres.db import Conn

__all__ = ["SQL", "migrate"]

SQL = """
CREATE TABLE history_chain (
    session_id TEXT NOT NULL,
    link BIGINT NOT NULL,
    kind TEXT NOT NULL,
    row_id TEXT NOT NULL,
    hash BYTEA NOT NULL,
    migrated SMALLINT NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, link)
);
CREATE TRIGGER history_chain_no_update BEFORE UPDATE ON history_chain FOR EACH ROW
    EXECUTE FUNCTION mnesis_reject('the hash chain cannot be changed');
CREATE TRIGGER history_chain_no_delete BEFORE DELETE ON history_chain FOR EACH ROW
    EXECUTE FUNCTION mnesis_reject_delete('the hash chain cannot be deleted');
CREATE TRIGGER history_no_truncate BEFORE TRUNCATE ON history_chain
    FOR EACH STATEMENT EXECUTE FUNCTION mnesis_reject('history cannot be truncated');
"""

_READS = [pg(sql) for sql in chain_reads(lambda column: f"{column}::text")]


async def _fetch(conn: Conn, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    cur = await conn.execute(sql, args)
    return await cur.fetchall()


async def migrate(conn: Conn) -> None:
    """Apply the migration (inside the caller's transaction, which holds the migration
    lock)."""
    await conn.execute(SQL)
    for (sid,) in await _fetch(conn, "SELECT id FROM sessions ORDER BY created_at, id", ()):
        rows: list[list[tuple[Any, ...]]] = [[]]
        rows += [await _fetch(conn, sql, (sid,) * sql.count("%s")) for sql in _READS[1:]]
        links = session_links(sid, (rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]))
        inserts = chain_links({}, links, migrated=True)
        if inserts:
            async with conn.cursor() as cur:
                await cur.executemany(pg(LINK_INSERT), inserts)
