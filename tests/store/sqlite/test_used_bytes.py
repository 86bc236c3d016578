"""``used_bytes`` on SQLite leaves free pages out: the same data reports the same size
however many pages the file has free (the background full-text merge frees pages at
times of its own)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from mnesis.store import ImmutableStore


async def test_free_pages_do_not_count_on_sqlite(tmp_path: Path) -> None:
    path = str(tmp_path / "free.db")
    await (await ImmutableStore.open(path)).close()
    # A file from before auto-vacuum keeps free pages (a new one has none to keep).
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.executescript("PRAGMA auto_vacuum = NONE; VACUUM;")
    store = await ImmutableStore.open(path)
    try:
        before = await store.used_bytes()
        # Pages freed by dropping a table stay in the file as free pages.
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE scratch (x BLOB)")
            conn.executemany("INSERT INTO scratch VALUES (?)", [(b"x" * 4000,)] * 200)
        grown = await store.used_bytes()
        with sqlite3.connect(path) as conn:
            conn.execute("DROP TABLE scratch")
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            size = conn.execute("PRAGMA page_size").fetchone()[0]
        assert free >= 200 and grown > before + 200 * 4000
        assert await store.used_bytes() == before == (pages - free) * size
    finally:
        await store.close()
