"""Opening a file another process is busy with: the wait honours ``connection_timeout``.

SQLite answers a journal-mode change with "database is locked" at once, without
calling the busy handler, while another connection holds a write lock on a file
still in rollback mode (the moment two processes create one new database).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mnesis.config import StoreConfig
from mnesis.errors import StoreBusyError
from mnesis.store import StorePool


def _hold_write_lock(path: Path, started: threading.Event, seconds: float) -> None:
    """Hold a write transaction on a rollback-journal file for ``seconds``."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _mnesis_migrations ("
            "name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE IF NOT EXISTS _mnesis_probe (x INTEGER)")
        started.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def _journal_mode(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


@contextmanager
def _write_lock_held(path: Path, seconds: float) -> Iterator[None]:
    """Another connection holds a write lock on ``path`` for ``seconds`` from entry; the
    exit waits until it has let go."""
    started = threading.Event()
    holder = threading.Thread(target=_hold_write_lock, args=(path, started, seconds))
    holder.start()
    try:
        assert started.wait(10)
        yield
    finally:
        holder.join()


async def test_opening_waits_for_another_writer_to_finish(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with _write_lock_held(path, 0.5):
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=str(path))
            assert await store.list_sessions() == []
        finally:
            await pool.close_all()
    assert _journal_mode(path) == "wal"


async def test_a_lock_held_past_the_timeout_is_a_typed_busy_error(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    with _write_lock_held(path, 1.0):
        pool = StorePool()
        try:
            with pytest.raises(StoreBusyError, match="locked"):
                await pool.acquire(StoreConfig(db_path=str(path), connection_timeout=0.3))
        finally:
            await pool.close_all()
