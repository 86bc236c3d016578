"""One PostgreSQL database: its connection pool, migrations and transactions.

Connections come from a ``psycopg_pool.AsyncConnectionPool`` in autocommit mode; a
write runs inside one transaction (``BEGIN``/``COMMIT``), a read as single statements
or, when several must agree, in one ``REPEATABLE READ`` snapshot. The URL goes to libpq
as given, so the ``PG*`` environment variables, ``sslmode``, ``options`` and the rest of
libpq's parameters apply as they would for ``psql``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import conninfo as pg_conninfo
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from mnesis._tasks import wait_out
from mnesis.config import StoreConfig
from mnesis.errors import InvalidArgumentError, MnesisError, MnesisStoreError, StoreBusyError
from mnesis.store.postgres.errors import one_line, translate_pg_error
from mnesis.store.postgres.migrations import MIGRATIONS
from mnesis.store.postgres.nul import register_nul_escaping
from mnesis.store.shared.sql import pg
from mnesis.store.shared.statements import Batch, Plan

__all__ = ["Conn", "PostgresDatabase", "redact_url"]

logger = logging.getLogger("mnesis.store")
T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]

MIGRATION_LOCK = int.from_bytes(b"mnesismg", "big")
"""Advisory lock key held (for one transaction) while migrating."""
POOL_MAX_SIZE = 10
"""Connections per database and process (default of ``max_connections``)."""
_OUR_TABLES = ("sessions", "messages", "message_parts", "summaries", "context_items")


def redact_url(url: str) -> str:
    """The URL without its password (for messages and ``store.location``)."""
    parts = urlsplit(url)
    if not parts.scheme:
        try:
            params = pg_conninfo.conninfo_to_dict(url)
        except psycopg.Error:
            return "<unparsable conninfo>"
        params.pop("password", None)
        return pg_conninfo.make_conninfo(**{k: str(v) for k, v in params.items()})
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = "&".join(
        p for p in parts.query.split("&") if p and not p.lower().startswith("password=")
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


class PostgresDatabase:
    """A PostgreSQL database shared by the stores of a process (through ``StorePool``)."""

    def __init__(
        self,
        url: str,
        config: StoreConfig,
        *,
        max_connections: int = POOL_MAX_SIZE,
        read_only: bool = False,
    ) -> None:
        """``read_only``: never migrate (a missing or older schema is an error) and open
        every transaction read-only, so nothing in the database can change."""
        self.url = url
        self.max_connections = max_connections
        self.read_only = read_only
        self.config = config
        self.location = redact_url(url)
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._open_lock = asyncio.Lock()
        self._closed = False
        self._extra = self._connect_args()
        self.chained = True
        """The database keeps the hash chain (``m011_history_chain``): once migrated,
        always (a test may migrate it only so far)."""
        self.usage_kept = True
        """The database keeps each session's usage sums (``m015_session_usage``): once
        migrated, always (a test may migrate it only so far)."""

    def _connect_args(self) -> dict[str, Any]:
        try:
            given = pg_conninfo.conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise MnesisStoreError(
                f"invalid PostgreSQL URL {self.location}: {one_line(exc)}"
            ) from exc
        extra: dict[str, Any] = {}
        if "connect_timeout" not in given and "PGCONNECT_TIMEOUT" not in os.environ:
            extra["connect_timeout"] = max(2, int(self.config.connection_timeout))
        if "application_name" not in given and "PGAPPNAME" not in os.environ:
            extra["application_name"] = "mnesis"
        return extra

    # -- opening ---------------------------------------------------------------
    async def open(self) -> None:
        """Connect, migrate (read-only: check the schema is current) and start the pool
        (idempotent)."""
        async with self._open_lock:
            if self._closed:
                raise MnesisStoreError(f"database {self.location} is closed")
            if self._pool is not None:
                return
            # Migrate on a connection of our own first: a failure to connect surfaces
            # with libpq's reason instead of a pool timeout.
            conn = await self._connect()
            try:
                check = self._check_schema(conn) if self.read_only else self._migrate(conn)
                await self._guard(check)
            finally:
                await conn.close()
            pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
                self.url,
                min_size=1,
                max_size=self.max_connections,
                kwargs={"autocommit": True, **self._extra},
                configure=self._configure,
                timeout=self.config.connection_timeout,
                open=False,
                name="mnesis",
            )
            try:
                await pool.open(wait=True, timeout=self.config.connection_timeout)
            except PoolTimeout as exc:
                await pool.close()
                raise MnesisStoreError(
                    f"cannot connect to PostgreSQL {self.location}: no connection within "
                    f"{self.config.connection_timeout:g}s"
                ) from exc
            self._pool = pool

    async def connect(self) -> Conn:
        """A connection of its own, outside the pool, in autocommit mode (the caller
        closes it); used to hold session-level advisory locks."""
        return await self._guard(self._connect())

    async def _connect(self) -> Conn:
        try:
            conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True, **self._extra)
        except psycopg.Error as exc:
            state = f" [{exc.sqlstate}]" if exc.sqlstate else ""
            raise MnesisStoreError(
                f"cannot connect to PostgreSQL {self.location}: {one_line(exc)}{state}"
            ) from None
        await self._configure(conn)
        return conn

    async def _configure(self, conn: Conn) -> None:
        register_nul_escaping(conn.adapters)
        if self.read_only:
            await conn.execute("SET default_transaction_read_only = on")
        # Every statement is bounded, unless the server, role, database or URL
        # already chose a bound.
        bound = int(self.config.connection_timeout * 1000)
        for setting in ("statement_timeout", "lock_timeout"):
            cur = await conn.execute(f"SHOW {setting}")
            row = await cur.fetchone()
            if row is not None and row[0] == "0":
                await conn.execute(f"SET {setting} = {bound}")

    async def _applied(self, conn: Conn) -> set[str] | None:
        """The migrations applied to the database (None: it has no mnesis schema);
        raises if a newer mnesis wrote it or foreign tables have mnesis's names."""
        cur = await conn.execute(
            "SELECT to_regclass('_mnesis_migrations') IS NOT NULL, "
            + ", ".join(f"to_regclass('{t}') IS NOT NULL" for t in _OUR_TABLES)
        )
        found = await cur.fetchone()
        assert found is not None
        if not found[0] and any(found[1:]):
            raise MnesisStoreError(
                f"{self.location} already has tables named like mnesis's "
                "(sessions, messages, ...) but no mnesis migrations; mnesis will not "
                "modify them (use another database or schema)"
            )
        if not found[0]:
            return None
        cur = await conn.execute("SELECT name FROM _mnesis_migrations")
        applied = {row[0] for row in await cur.fetchall()}
        unknown = applied - {name for name, _ in MIGRATIONS}
        if unknown:
            raise MnesisStoreError(
                f"{self.location} was written by a newer mnesis (migrations "
                f"{sorted(unknown)}); upgrade mnesis-lcm"
            )
        return applied

    async def _check_schema(self, conn: Conn) -> None:
        """Refuse a database whose schema a read-only opening would have to create or
        migrate."""
        applied = await self._applied(conn)
        hint = (
            "a read-only command never creates or migrates a schema; open it for writing "
            "once (any writing command, e.g. `mnesis check --repair --db URL`, or "
            "`await ImmutableStore.open(URL)` in Python) to "
        )
        if applied is None:
            raise MnesisStoreError(f"{self.location} holds no mnesis schema; {hint}create it")
        missing = [name for name, _ in MIGRATIONS if name not in applied]
        if missing:
            raise MnesisStoreError(
                f"{self.location} has an older mnesis schema (migrations {missing} not "
                f"applied); {hint}migrate it"
            )

    async def _migrate(self, conn: Conn) -> None:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            applied = await self._applied(conn)
            if applied is None:
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS _mnesis_migrations ("
                    "name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)"
                )
                applied = set()
            for name, migration in MIGRATIONS:
                if name in applied:
                    continue
                if isinstance(migration, str):
                    await conn.execute(migration)
                else:
                    await migration(conn)
                applied.add(name)
                await conn.execute(
                    "INSERT INTO _mnesis_migrations (name, applied_at) VALUES (%s, %s)",
                    (name, int(time.time() * 1000)),
                )
                logger.info("applied migration %s to %s", name, self.location)
            self.chained = "m011_history_chain" in applied
            self.usage_kept = "m015_session_usage" in applied

    # -- running ---------------------------------------------------------------
    async def _guard(self, work: Awaitable[T]) -> T:
        try:
            return await work
        except MnesisError:
            raise
        except psycopg.Error as exc:
            raise translate_pg_error(exc, self.location) from exc
        except PoolTimeout as exc:
            raise StoreBusyError(
                f"no free connection to {self.location} within {self.config.connection_timeout:g}s"
            ) from exc
        except PoolClosed as exc:
            raise MnesisStoreError(f"database {self.location} is closed") from exc
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"text is not valid Unicode: {exc.reason}") from exc

    def _pool_or_raise(self) -> AsyncConnectionPool[Conn]:
        if self._pool is None or self._closed:
            raise MnesisStoreError(f"database {self.location} is closed")
        return self._pool

    async def read(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn(conn)`` on a pooled connection (autocommit: one statement at a time)."""
        pool = self._pool_or_raise()

        async def _run() -> T:
            async with pool.connection() as conn:
                return await fn(conn)

        return await _uncancellable(self._guard(_run()))

    async def write(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn(conn)`` inside one transaction (committed, or rolled back on error).

        A cancelled caller does not interrupt the transaction: it runs to its commit or
        rollback on its own (as a write on SQLite's worker thread does), so no
        connection is left inside a half-done transaction holding row locks."""
        pool = self._pool_or_raise()

        async def _run() -> T:
            async with pool.connection() as conn, conn.transaction():
                return await fn(conn)

        return await _uncancellable(self._guard(_run()))

    async def snapshot(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn(conn)`` in one read-only ``REPEATABLE READ`` transaction: every query
        sees the same committed state."""
        pool = self._pool_or_raise()

        async def _run() -> T:
            async with pool.connection() as conn, conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                return await fn(conn)

        return await _uncancellable(self._guard(_run()))

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one read statement (``?`` placeholders)."""

        async def _read(conn: Conn) -> list[tuple[Any, ...]]:
            cur = await conn.execute(pg(sql), args)
            return await cur.fetchall()

        return await self.read(_read)

    async def change(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement (``?`` placeholders) in its own write transaction; how
        many rows it changed."""

        async def _write(conn: Conn) -> int:
            cur = await conn.execute(pg(sql), args)
            return cur.rowcount

        return await self.write(_write)

    async def change_many(self, batches: Sequence[Batch]) -> None:
        """Run each statement (``?`` placeholders) over its rows (none: skipped), all in
        one write transaction."""

        async def _write(conn: Conn) -> None:
            for sql, rows in batches:
                if rows:
                    async with conn.cursor() as cur:
                        await cur.executemany(pg(sql), rows)

        await self.write(_write)

    async def change_after(
        self, sql: str, args: Sequence[Any], plan: Plan, *, then: str | None = None
    ) -> None:
        """Read the first row of ``sql``, then run the statements ``plan`` makes of it
        (``?`` placeholders), all in one write transaction (``then``: see
        :class:`~mnesis.store.shared.statements.Statements`)."""

        async def _write(conn: Conn) -> None:
            cur = await conn.execute(pg(sql), args)
            row = await cur.fetchone()
            if row is not None and then is not None:
                cur = await conn.execute(pg(then), (row[-1],))
                found = await cur.fetchone()
                width = len(cur.description or ())
                row = (*row, *(found if found is not None else (None,) * width))
            for statement, values in plan(row):
                await conn.execute(pg(statement), values)

        await self.write(_write)

    async def close(self) -> None:
        """Close every connection (idempotent)."""
        async with self._open_lock:
            if self._closed:
                return
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


async def _uncancellable(work: Coroutine[Any, Any, T]) -> T:
    """Await ``work`` in a task of its own that the caller's cancellation cannot cut short.

    A cancelled caller sees ``CancelledError`` once the transaction has committed or rolled
    back, so whatever it does next (a cleanup write on another pooled connection) comes
    after it, as on SQLite's single worker thread."""
    return await wait_out(asyncio.ensure_future(work))
