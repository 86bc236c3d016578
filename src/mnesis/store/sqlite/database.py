"""One SQLite database file: one connection, one writer thread, migrations.

Every operation on a file runs on the file's single worker thread, so all the
sessions of a process that share a file share one connection and never see
"database is locked" from each other. Other processes are serialised by
SQLite's own lock (``BEGIN IMMEDIATE`` plus ``busy_timeout``). WAL checkpoints run
on a thread of their own, never inside a commit (see ``checkpoint.py``).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from mnesis.config import StoreConfig
from mnesis.errors import (
    AppendOnlyViolationError,
    InvalidArgumentError,
    MnesisError,
    MnesisStoreError,
    StoreBusyError,
    StoreCorruptError,
    StoreFullError,
    StoreReadOnlyError,
)
from mnesis.store.shared.statements import Batch, Plan
from mnesis.store.sqlite.checkpoint import WalCheckpointer
from mnesis.store.sqlite.migrations import MIGRATIONS
from mnesis.store.sqlite.paths import prepare_path
from mnesis.store.sqlite.undecodable import is_undecodable, undecodable_error

__all__ = ["SQLiteDatabase", "translate_sqlite_error"]

logger = logging.getLogger("mnesis.store")
_LEGACY_TABLES = frozenset(
    {"sessions", "messages", "message_parts", "context_items", "summary_nodes", "file_references"}
)
"""The tables of a database of the earlier mnesis library (see ``mnesis upgrade``)."""
T = TypeVar("T")


def translate_sqlite_error(exc: sqlite3.Error, path: str) -> MnesisStoreError:
    """Map a driver error to the mnesis error a caller can act on."""
    msg = str(exc)
    low = msg.lower()
    # A damaged schema's message quotes the schema (an append-only trigger's text too).
    if "not a database" in low or "malformed" in low or "file is encrypted" in low:
        return StoreCorruptError(f"{path} is not a usable mnesis database: {msg}")
    if "could not decode to utf-8" in low:
        return StoreCorruptError(
            f"{path}: a stored text is not valid UTF-8 ({msg}); run `mnesis check --deep` "
            "to name the damaged row, and restore this database from a backup"
        )
    if "mnesis append-only" in low:
        return AppendOnlyViolationError(msg)
    if "locked" in low or "busy" in low:
        return StoreBusyError(f"database {path} stayed locked by another process: {msg}")
    if "readonly" in low or "read-only" in low:
        return StoreReadOnlyError(f"database {path} is read-only: {msg}")
    if "disk is full" in low or "database or disk is full" in low:
        return StoreFullError(
            f"disk full while writing {path}: {msg} (besides the database file, SQLite "
            "needs free space for its write-ahead log: about 5 MB before its first "
            "checkpoint; free some space and retry)"
        )
    if "unable to open" in low:
        return StoreReadOnlyError(f"cannot open database {path}: {msg}")
    return MnesisStoreError(f"database error on {path}: {msg}")


class SQLiteDatabase:
    """A database file with its single connection and worker thread."""

    def __init__(self, path: str, config: StoreConfig | None = None) -> None:
        self.path = prepare_path(path)
        self.config = config or StoreConfig(db_path=path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnesis-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._checkpointer: WalCheckpointer | None = None
        self.context_keys = True
        """The context view is stored in ``context_slots`` (``m010_context_keys``): once a
        writable file is migrated, always (a test may migrate it only so far); a file
        opened read-only may predate it."""
        self.chained = True
        """The file keeps the hash chain (``m011_history_chain``): once a writable file is
        migrated, always; a file opened read-only may predate it."""
        self.usage_kept = True
        """The file keeps each session's usage sums (``m015_session_usage``): once a
        writable file is migrated, always; a file opened read-only may predate it."""

    # -- worker-thread side -------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        cfg = self.config
        conn = sqlite3.connect(
            self.path,
            timeout=cfg.connection_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(cfg.connection_timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            self._refuse_foreign(conn)
            if not conn.execute("PRAGMA page_count").fetchone()[0]:
                # A new file gives the pages FTS5 segment merges free back to the file
                # system at each commit; an existing one keeps its mode (a change
                # needs a VACUUM, and setting it would write to a read-only file).
                conn.execute("PRAGMA auto_vacuum = FULL")
            if cfg.wal_mode and self.path != ":memory:":
                mode = self._enable_wal(conn)
                if mode != "wal":
                    logger.warning("could not enable WAL on %s (mode=%s)", self.path, mode)
                else:
                    conn.execute("PRAGMA wal_autocheckpoint = 0")
                    self._checkpointer = WalCheckpointer(
                        self.path, int(cfg.connection_timeout * 1000)
                    )
            conn.execute(f"PRAGMA synchronous = {cfg.synchronous}")
            conn.execute("PRAGMA temp_store = MEMORY")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _enable_wal(self, conn: sqlite3.Connection) -> str:
        """Switch to WAL, retrying while another process holds the file.

        SQLite does not call the busy handler for a journal-mode change (it
        could deadlock), so two processes opening one new file at the same
        moment see "database is locked" at once; the retry honours the same
        ``connection_timeout`` every other lock wait does.
        """
        deadline = time.monotonic() + self.config.connection_timeout
        delay = 0.005
        while True:
            try:
                return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower() or time.monotonic() >= deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _refuse_foreign(self, conn: sqlite3.Connection) -> None:
        """Refuse another application's database before anything (even WAL mode) is written."""
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if tables and "_mnesis_migrations" not in tables:
            if tables >= _LEGACY_TABLES:
                raise StoreCorruptError(
                    f"{self.path} is a database of the earlier mnesis library (0.4.x); "
                    f"copy it into this schema with `mnesis upgrade {self.path}` "
                    "(or mnesis.importers.upgrade_database) and open the new file"
                )
            raise StoreCorruptError(
                f"{self.path} is a SQLite database of another application "
                f"(tables: {', '.join(sorted(tables)[:5])}); mnesis will not modify it"
            )

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _mnesis_migrations ("
            "name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        applied = {row[0] for row in conn.execute("SELECT name FROM _mnesis_migrations")}
        known = {name for name, _ in MIGRATIONS}
        unknown = applied - known
        if unknown:
            raise StoreCorruptError(
                f"{self.path} was written by a newer mnesis (migrations {sorted(unknown)}); "
                "upgrade mnesis-lcm"
            )
        for name, migration in MIGRATIONS:
            if name in applied:
                continue
            conn.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have applied it while we waited for the lock.
                if conn.execute(
                    "SELECT 1 FROM _mnesis_migrations WHERE name = ?", (name,)
                ).fetchone():
                    conn.execute("COMMIT")
                    continue
                if isinstance(migration, str):
                    for statement in _split_sql(migration):
                        conn.execute(statement)
                else:
                    migration(conn)
                conn.execute(
                    "INSERT INTO _mnesis_migrations (name, applied_at) VALUES (?, ?)",
                    (name, int(time.time() * 1000)),
                )
                conn.execute("COMMIT")
                logger.info("applied migration %s to %s", name, self.path)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        self.context_keys = _has_context_keys(conn)
        self.chained = _has_chain(conn)
        self.usage_kept = _has_usage(conn)

    def _run_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connection()
            return fn(conn)
        except sqlite3.Error as exc:
            if is_undecodable(exc):
                raise undecodable_error(exc, self.path, conn) from exc
            raise translate_sqlite_error(exc, self.path) from exc
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"text is not valid Unicode: {exc.reason}") from exc
        except UnicodeDecodeError as exc:
            raise undecodable_error(exc, self.path, conn) from exc

    def _run_write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc, self.path) from exc
        except UnicodeDecodeError as exc:
            raise undecodable_error(exc, self.path, conn) from exc
        try:
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback(conn)
            if isinstance(exc, sqlite3.Error) and is_undecodable(exc):
                raise undecodable_error(exc, self.path, conn) from exc
            if isinstance(exc, sqlite3.Error):
                raise translate_sqlite_error(exc, self.path) from exc
            if isinstance(exc, UnicodeEncodeError):
                raise InvalidArgumentError(f"text is not valid Unicode: {exc.reason}") from exc
            if isinstance(exc, UnicodeDecodeError):
                raise undecodable_error(exc, self.path, conn) from exc
            raise
        if self._checkpointer is not None:
            self._checkpointer.after_commit(conn)
        return result

    def _run_write_if_free(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        waits = int(self.config.connection_timeout * 1000)
        self._run_read(lambda conn: conn.execute("PRAGMA busy_timeout = 0"))
        try:
            return self._run_write(fn)
        finally:
            self._run_read(lambda conn: conn.execute(f"PRAGMA busy_timeout = {waits}"))

    def _rollback(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            logger.debug("rollback failed on %s", self.path, exc_info=True)

    # -- event-loop side ----------------------------------------------------
    async def _submit(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise MnesisStoreError(f"database {self.path} is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn)
        except RuntimeError as exc:
            if isinstance(exc, MnesisError):
                raise
            if "shutdown" in str(exc):
                raise MnesisStoreError(f"database {self.path} is closed") from exc
            raise

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on the worker thread (no explicit transaction)."""
        return await self._submit(lambda: self._run_read(fn))

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on the worker thread inside ``BEGIN IMMEDIATE``/``COMMIT``.

        The transaction finishes on the worker thread even if the awaiting task is
        cancelled, so a cancelled write is either fully committed or rolled back.
        """
        return await self._submit(lambda: self._run_write(fn))

    async def write_if_free(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """:meth:`write`, without waiting for the write lock: ``StoreBusyError`` at once
        while another connection holds it (for work that may be left to a later call)."""
        return await self._submit(lambda: self._run_write_if_free(fn))

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one read statement."""
        return await self.read(lambda conn: conn.execute(sql, args).fetchall())

    async def change(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement in its own write transaction; how many rows it changed."""
        return await self.write(lambda conn: conn.execute(sql, args).rowcount)

    async def change_many(self, batches: Sequence[Batch]) -> None:
        """Run each statement over its rows (none: skipped), all in one write transaction."""

        def _run(conn: sqlite3.Connection) -> None:
            for sql, rows in batches:
                if rows:
                    conn.executemany(sql, rows)

        await self.write(_run)

    async def change_after(
        self, sql: str, args: Sequence[Any], plan: Plan, *, then: str | None = None
    ) -> None:
        """Read the first row of ``sql``, then run the statements ``plan`` makes of it,
        all in one write transaction (``then``: see :class:`Statements`)."""

        def _run(conn: sqlite3.Connection) -> None:
            row = conn.execute(sql, args).fetchone()
            if row is not None and then is not None:
                cur = conn.execute(then, (row[-1],))
                row = (*row, *(cur.fetchone() or (None,) * len(cur.description)))
            for statement, values in plan(row):
                conn.execute(statement, values)

        await self.write(_run)

    async def open(self) -> None:
        """Connect and migrate now (otherwise done by the first operation)."""
        await self.read(lambda conn: None)

    async def close(self) -> None:
        """Close the connection and stop the worker thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_sync)
        self._executor.shutdown(wait=True)

    def close_sync(self) -> None:
        """Close from synchronous code (interpreter exit, tests)."""
        if self._closed:
            return
        self._closed = True
        self._executor.submit(self._close_sync).result()
        self._executor.shutdown(wait=True)

    def _close_sync(self) -> None:
        if self._checkpointer is not None:
            # Stopped first: closing the last connection then folds the WAL in.
            self._checkpointer.stop()
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


def _has_context_keys(conn: sqlite3.Connection) -> bool:
    """Whether ``m010_context_keys`` is applied to the file."""
    found = conn.execute("SELECT 1 FROM _mnesis_migrations WHERE name = 'm010_context_keys'")
    return found.fetchone() is not None


def _has_chain(conn: sqlite3.Connection) -> bool:
    """Whether ``m011_history_chain`` is applied to the file."""
    found = conn.execute("SELECT 1 FROM _mnesis_migrations WHERE name = 'm011_history_chain'")
    return found.fetchone() is not None


def _has_usage(conn: sqlite3.Connection) -> bool:
    """Whether ``m015_session_usage`` is applied to the file."""
    found = conn.execute("SELECT 1 FROM _mnesis_migrations WHERE name = 'm015_session_usage'")
    return found.fetchone() is not None


def _split_sql(script: str) -> list[str]:
    """Split a migration script into statements (trigger bodies kept whole)."""
    statements: list[str] = []
    buf: list[str] = []
    for line in script.splitlines():
        if line.strip().startswith("--") or not line.strip():
            continue
        buf.append(line)
        candidate = "\n".join(buf)
        if sqlite3.complete_statement(candidate):
            statements.append(candidate.strip())
            buf = []
    if buf and "\n".join(buf).strip():
        statements.append("\n".join(buf).strip())
    return statements
