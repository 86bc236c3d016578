"""StoreFullError says how much space SQLite's write-ahead log needs (issue 34).

A tiny disk filled at turn 42 with a 460 KB database: the WAL needs ~5 MB before its
first checkpoint, which neither the docs nor the error said.
"""

from __future__ import annotations

import sqlite3

from mnesis.errors import StoreFullError
from mnesis.store.sqlite.database import translate_sqlite_error


def test_the_disk_full_error_names_the_space_the_wal_needs() -> None:
    error = translate_sqlite_error(sqlite3.OperationalError("database or disk is full"), "x.db")
    assert isinstance(error, StoreFullError)
    assert "write-ahead log" in str(error) and "5 MB" in str(error)
