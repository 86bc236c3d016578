"""A new SQLite file returns freed pages at each commit (``auto_vacuum = FULL``): the
pages FTS5 segment merges free no longer stay in the file. An existing file keeps the
mode it was made with (changing it takes a ``VACUUM``) and still opens and works: see
``test_used_bytes``."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from mnesis.store import ImmutableStore


def _pragma(path: str, name: str) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute(f"PRAGMA {name}").fetchone()[0])


def _pages(path: str) -> tuple[int, int, int]:
    """The file's auto-vacuum mode, its pages and its free pages."""
    return (
        _pragma(path, "auto_vacuum"),
        _pragma(path, "page_count"),
        _pragma(path, "freelist_count"),
    )


def _grow_and_free(path: str) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE scratch (x BLOB)")
        conn.executemany("INSERT INTO scratch VALUES (?)", [(b"x" * 4000,)] * 200)
        conn.commit()
        conn.execute("DROP TABLE scratch")
        conn.commit()


async def test_a_new_file_keeps_no_free_pages(tmp_path: Path) -> None:
    path = str(tmp_path / "new.db")
    store = await ImmutableStore.open(path)
    try:
        mode, before, _ = _pages(path)
        assert mode == 1
        _grow_and_free(path)
        assert _pages(path) == (1, before, 0)
    finally:
        await store.close()
