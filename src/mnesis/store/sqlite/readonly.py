"""A SQLite database opened read-only: for inspection that must never change a file.

:class:`ReadOnlySQLiteDatabase` connects with ``mode=ro`` and never migrates, switches
the journal mode or writes. A database in WAL mode whose ``-wal`` file is absent (no
writer has it open) is opened ``immutable=1``, because a read-only WAL connection
would otherwise create the ``-wal`` and ``-shm`` files next to it; with a ``-wal``
file present, SQLite's ordinary read-only locking is used. Every write raises
:class:`~mnesis.errors.StoreReadOnlyError`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import quote

from mnesis.config import StoreConfig
from mnesis.errors import MnesisStoreError, StoreCorruptError, StoreReadOnlyError
from mnesis.store.sqlite.database import (
    SQLiteDatabase,
    _has_chain,
    _has_context_keys,
    _has_usage,
)
from mnesis.store.sqlite.migrations import MIGRATIONS
from mnesis.store.sqlite.paths import check_header

__all__ = ["ReadOnlySQLiteDatabase"]

T = TypeVar("T")


class ReadOnlySQLiteDatabase(SQLiteDatabase):
    """An existing mnesis SQLite file, opened without any possibility of writing it."""

    def __init__(self, path: str, config: StoreConfig | None = None) -> None:
        full = os.path.abspath(os.path.expanduser(path))
        if os.path.isdir(full):
            raise StoreCorruptError(f"{full} is a directory, not a database file")
        if not os.path.exists(full):
            raise MnesisStoreError(f"no database at {full}")
        check_header(full)
        super().__init__(full, config)

    def _connect(self) -> sqlite3.Connection:
        uri = f"file:{quote(self.path)}?mode=ro"
        if not os.path.exists(self.path + "-wal"):
            uri += "&immutable=1"
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=self.config.connection_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.config.connection_timeout * 1000)}")
            self._refuse_foreign(conn)
            self._check_schema(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "_mnesis_migrations" not in tables:
            raise StoreCorruptError(f"{self.path} is an empty database, not a mnesis database")
        applied = {r[0] for r in conn.execute("SELECT name FROM _mnesis_migrations")}
        unknown = applied - {name for name, _ in MIGRATIONS}
        if unknown:
            raise StoreCorruptError(
                f"{self.path} was written by a newer mnesis (migrations {sorted(unknown)}); "
                "upgrade mnesis-lcm"
            )
        if MIGRATIONS[0][0] not in applied:
            raise StoreCorruptError(f"{self.path} is not an initialised mnesis database")
        self.context_keys = _has_context_keys(conn)
        self.chained = _has_chain(conn)
        self.usage_kept = _has_usage(conn)

    def _run_write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        raise StoreReadOnlyError(f"database {self.path} is open read-only")
