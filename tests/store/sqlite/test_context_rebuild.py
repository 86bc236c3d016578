"""SQLite: the neighbour context of every indexed part can be rebuilt exactly from the
immutable history (what not storing the ``search_context`` column relies on)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mnesis.models.ids import new_id
from tests.store.sqlite.helpers import indexed_contexts, tokens_of
from tests.store.sqlite.history import random_history, rebuilt_contexts


async def test_every_stored_context_is_rebuilt_exactly(tmp_path: Path) -> None:
    path = str(tmp_path / "rebuild.db")
    sessions = [new_id("sess") for _ in range(3)]
    await random_history(path, sessions, 300, 17, max_words=200, times=(-(10**12), 4 * 10**12))
    conn = sqlite3.connect(path)
    try:
        rebuilt = rebuilt_contexts(conn, sessions)
        # The column is not stored (m009): what the writer computed is what it indexed.
        assert indexed_contexts(conn) == tokens_of(conn, rebuilt)
    finally:
        conn.close()
    assert sum(1 for c in rebuilt.values() if c and "\n" in c) > 200
