"""A per-session hash chain over history (SQLite): ``history_chain``.

One row per link (see :mod:`~mnesis.store.shared.chain` for what each link covers):
``(session_id, link)`` numbers the links 1, 2, ... per session in write order, ``kind``
and ``row_id`` name the row, ``hash`` chains it to the link before. The table is
append-only like the history it covers (a purge may delete a session's links, as it
deletes its rows). Rows that existed before this migration get their links here, with
``migrated = 1``: they prove that a row has not changed since the migration, not since
it was written.
"""

from __future__ import annotations

import sqlite3

from mnesis.store.shared.chain import LINK_INSERT, chain_links
from mnesis.store.shared.chain_check import chain_reads, session_links

__all__ = ["OBJECTS", "migrate"]

OBJECTS = (
    """
CREATE TABLE history_chain (
    session_id TEXT NOT NULL,
    link INTEGER NOT NULL,
    kind TEXT NOT NULL,
    row_id TEXT NOT NULL,
    hash BLOB NOT NULL,
    migrated INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, link)
) WITHOUT ROWID
""",
    """
CREATE TRIGGER history_chain_no_update BEFORE UPDATE ON history_chain BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: the hash chain cannot be changed');
END
""",
    """
CREATE TRIGGER history_chain_no_delete BEFORE DELETE ON history_chain
WHEN NOT EXISTS (SELECT 1 FROM purge_grants WHERE session_id = OLD.session_id) BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: the hash chain cannot be deleted');
END
""",
)

_READS = chain_reads(lambda column: f"CAST({column} AS BLOB)")


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migration (inside the caller's ``BEGIN IMMEDIATE`` transaction)."""
    for statement in OBJECTS:
        conn.execute(statement)
    sessions = [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY rowid")]
    for sid in sessions:
        rows = [[]] + [conn.execute(sql, (sid,) * sql.count("?")).fetchall() for sql in _READS[1:]]
        links = session_links(sid, (rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]))
        conn.executemany(LINK_INSERT, chain_links({}, links, migrated=True))
