"""Reaching the SQLite database under a store, for tests of what the file enforces."""

from __future__ import annotations

from typing import cast

from mnesis.store import ImmutableStore, SQLiteStore
from mnesis.store.sqlite import SQLiteDatabase


def sqlite_db(store: ImmutableStore) -> SQLiteDatabase:
    """The SQLite database under a store (for raw reads and writes in tests)."""
    return cast(SQLiteStore, store.backend).db
