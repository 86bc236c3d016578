"""A purge on SQLite removes the session from the contentless FTS5 index too."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mnesis.store import StorePool
from tests.store.contract.test_purge import _session_with_summary


async def test_a_purge_leaves_no_trace_in_the_full_text_index(
    tmp_path: Path, pool: StorePool
) -> None:
    store = await pool.acquire(db_path=str(tmp_path / "purge.db"))
    doomed = await _session_with_summary(store, "zanzibar")
    await _session_with_summary(store, "quixotic")
    await store.purge_session(doomed)
    conn = sqlite3.connect(store.location)
    try:
        # A contentless index forgets a row only through an explicit 'delete' (given
        # every column's original value); without it the old rowids would still match.
        for column in ("text_content", "tool_content", "context"):
            rows = conn.execute(
                "SELECT rowid FROM message_parts_fts WHERE message_parts_fts MATCH ?",
                (f"{column} : zanzibar",),
            ).fetchall()
            assert rows == [], column
        kept = conn.execute(
            "SELECT count(*) FROM message_parts_fts WHERE message_parts_fts MATCH 'quixotic'"
        ).fetchone()[0]
        assert kept > 0
    finally:
        conn.close()
        await store.close()
