"""Run a test directory on both store backends: a ``db_path`` that is a file or a URL.

A directory opts in with a ``conftest.py`` that imports :func:`db_path` and
:func:`backend` from here. ``backend`` is a session-scoped parameter (``sqlite`` /
``postgres``, the test IDs), so module-scoped templates can depend on it too;
``db_path`` is then a fresh SQLite file or the URL of a fresh PostgreSQL database
(``pg_url``). Sessions take either as ``db_path``; the store factory picks the backend.

A test that is about SQLite itself (raw ``sqlite3`` on the file, file copies, WAL, a
process killed on a file) carries ``@pytest.mark.sqlite_only("reason")``: its
``postgres`` instance is deselected (see ``tests/conftest.py``), never skipped.

:func:`template_location` and :func:`clone_store` let a module build an expensive
store once and hand each test its own copy (a file copy on SQLite, ``CREATE DATABASE
… TEMPLATE`` on PostgreSQL); :func:`fetch` reads a store with plain SQL on either.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
import pytest

from mnesis import StorePool
from mnesis.config import StoreConfig
from mnesis.store.immutable import ImmutableStore
from mnesis.store.postgres import PostgresDatabase, PostgresStore
from tests.pg_fixtures import (
    TestDatabases,
    _with_database,
    create_database,
    throwaway_database,
)

__all__ = [
    "BACKENDS",
    "PgPool",
    "backend",
    "build_pool",
    "clone_store",
    "db_path",
    "fetch",
    "file_is_whole",
    "migrated_pg_template",
    "run_outside_loop",
    "store_copy",
    "template_location",
    "unopened_db_path",
]

T = TypeVar("T")

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


def run_outside_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end on a new event loop in a thread of its own, so a
    fixture can build something asynchronously even when an async fixture asked for it
    (``request.getfixturevalue`` inside the test's running loop)."""
    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The store backend of this test instance (``sqlite`` or ``postgres``)."""
    return str(request.param)


@pytest.fixture(scope="session")
def migrated_pg_template(pg_dsn: str, pg_databases: TestDatabases) -> Iterator[str]:
    """A database mnesis has migrated, nothing else in it: fresh test databases are
    copies of it (``CREATE DATABASE … TEMPLATE``, made ahead by ``pg_databases``, which
    outlives it), which is faster than migrating each."""

    async def migrate(url: str) -> None:
        pool = StorePool()
        try:
            await (await pool.acquire(db_path=url)).close()
        finally:
            await pool.close_all()

    with throwaway_database(pg_dsn, "mnesis_migrated_") as url:
        run_outside_loop(migrate(url))
        yield _admin(url)[1]


@pytest.fixture
def db_path(backend: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh store location of the test's backend holding mnesis's (empty) schema: a
    new SQLite file, or the URL of a new database (copies of the migrated templates)."""
    if backend == "sqlite":
        template = str(request.getfixturevalue("migrated_sqlite_template"))
        path = str(request.getfixturevalue("tmp_path") / "mnesis.db")
        clone_store(template, path)
        yield path
        return
    template = str(request.getfixturevalue("migrated_pg_template"))
    databases: TestDatabases = request.getfixturevalue("pg_databases")
    with databases.fresh(template) as url:
        yield url


@pytest.fixture
def unopened_db_path(backend: str, request: pytest.FixtureRequest) -> str:
    """Where a test's store would be, nothing opened there yet: a SQLite path with no
    file at it (so a test can prove that nothing was created), or on PostgreSQL, whose
    databases the server's admin creates, the URL ``db_path`` gives."""
    if backend == "sqlite":
        return str(request.getfixturevalue("tmp_path") / "unopened.db")
    return str(request.getfixturevalue("db_path"))


def _is_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def _admin(url: str) -> tuple[str, str]:
    """The maintenance-database URL of ``url``'s server, and ``url``'s database name."""
    return _with_database(url, "postgres"), urlsplit(url).path.lstrip("/")


@contextmanager
def template_location(
    backend: str, request: pytest.FixtureRequest, name: str = "template"
) -> Iterator[str]:
    """A location to build a template store in (removed afterwards)."""
    if backend == "sqlite":
        factory = request.getfixturevalue("tmp_path_factory")
        yield str(factory.mktemp(name) / f"{name}.db")
        return
    with throwaway_database(str(request.getfixturevalue("pg_dsn")), "mnesis_tpl_") as url:
        yield url


@contextmanager
def store_copy(source: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A test's own copy of the template store at ``source``: a file in the test's temp
    directory, or a database that ``pg_databases`` copied from ``source`` while the test
    before ran (as ``db_path``'s are; a test taking ``db_path`` and then
    :func:`clone_store` made and dropped one database more, on the spot)."""
    if not _is_url(source):
        path = str(request.getfixturevalue("tmp_path") / "mnesis.db")
        clone_store(source, path)
        yield path
        return
    databases: TestDatabases = request.getfixturevalue("pg_databases")
    with databases.fresh(_admin(source)[1]) as url:
        yield url


def clone_store(source: str, target: str) -> None:
    """Make ``target`` (a fresh location of the same backend) a copy of ``source``.

    Nothing may be connected to either (close the template's pool after building)."""
    if not _is_url(source):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(source + suffix):
                shutil.copyfile(source + suffix, target + suffix)
        return
    admin, template = _admin(source)
    _, database = _admin(target)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")  # type: ignore[arg-type]
        create_database(conn, database, template)


def fetch(location: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of a read-only query on either backend (``?`` placeholders)."""
    if not _is_url(location):
        conn = sqlite3.connect(location, timeout=30)
        try:
            return [tuple(row) for row in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()
    with psycopg.connect(location, autocommit=True) as pg:
        cursor = pg.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return [tuple(row) for row in cursor.fetchall()]


def file_is_whole(location: str) -> bool:
    """``PRAGMA integrity_check`` of a SQLite file is ``ok``; a PostgreSQL database has
    no file of ours that a killed writer could tear (the server's WAL covers it): True."""
    if _is_url(location):
        return True
    return fetch(location, "PRAGMA integrity_check") == [("ok",)]


class PgPool(StorePool):
    """A pool that opens every store on one PostgreSQL database with a chosen number of
    connections. One connection queues every statement in order, as SQLite's single
    writer does, so a build whose background compaction races its next turns (how many
    rounds compaction gets) comes out the same as on SQLite, whatever the load."""

    def __init__(self, url: str, max_connections: int = 10) -> None:
        super().__init__()
        self.url = url
        self.max_connections = max_connections

    async def acquire(
        self,
        db_path: StoreConfig | str | None = None,
        *,
        wal_mode: bool = True,
        connection_timeout: float = 30.0,
        config: StoreConfig | None = None,
    ) -> ImmutableStore:
        db = PostgresDatabase(
            self.url, StoreConfig(database_url=self.url), max_connections=self.max_connections
        )
        await db.open()
        return ImmutableStore.over(PostgresStore(db, pool=None, pool_key=self.url))


def build_pool(location: str) -> StorePool:
    """The pool a template build uses: a one-connection :class:`PgPool` on PostgreSQL
    (deterministic, as above), a plain pool on SQLite."""
    return PgPool(location, max_connections=1) if _is_url(location) else StorePool()
