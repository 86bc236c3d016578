"""PostgreSQL for the tests: one throwaway cluster per test session, one database per test.

``pg_dsn`` is the server: ``MNESIS_TEST_PG_DSN`` when set, otherwise a cluster started
here by :class:`benchmarks._pg.Cluster` (shared with the benchmarks): the binaries under
``/usr/lib/postgresql/*/bin`` in a temp directory, durability switched off, run as the
``postgres`` OS user when the test process is root. ``pytest-postgresql`` has no such
option (its issues #341 and #455 were closed without one), hence this code.

The cluster's data directory is in memory (``/dev/shm``) when there is room there:
on a disk, the server's system time for copying a template (``CREATE DATABASE``) was
most of the suite's PostgreSQL CPU (about 330 ms a database against 20 ms in memory).

When no server can be had the tests fail with the reason; they never skip.
``pg_url`` gives each test a fresh empty database (created from ``template0``, dropped
afterwards), so tests are independent.

Creating and dropping a database takes the server a few hundred milliseconds, which
over hundreds of tests was a large share of the suite's time: :class:`TestDatabases`
(``pg_databases``) makes the next test's copy of a template on a background thread
while the current test runs, and drops used ones there too. Every test still gets a
database no other test has touched.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import psycopg
import pytest
from benchmarks._pg import Cluster, ClusterError, with_database

__all__ = [
    "TestDatabases",
    "cluster_parent",
    "create_database",
    "pg_databases",
    "pg_dsn",
    "pg_url",
    "throwaway_database",
]

MEMORY_DIR = "/dev/shm"
MEMORY_NEEDED = 4 << 30  # the suite's cluster holds up to ~1 GB of WAL besides its data


def cluster_parent() -> str | None:
    """Where a test cluster's directory goes: in memory when ``/dev/shm`` is a writable
    directory with room, else the system's temp directory (``None``)."""
    try:
        room = shutil.disk_usage(MEMORY_DIR).free
    except OSError:
        return None
    if not os.access(MEMORY_DIR, os.W_OK | os.X_OK) or room < MEMORY_NEEDED:
        return None
    return MEMORY_DIR


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The URL of a PostgreSQL server the tests may create databases on."""
    given = os.environ.get("MNESIS_TEST_PG_DSN")
    if given:
        yield given
        return
    try:
        cluster = Cluster(parent=cluster_parent())
    except ClusterError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        url = cluster.start()
    except ClusterError as exc:
        shutil.rmtree(cluster.root, ignore_errors=True)  # in memory, it would stay there
        pytest.fail(str(exc), pytrace=False)
    try:
        yield url
    finally:
        cluster.stop()


def _with_database(dsn: str, name: str) -> str:
    return with_database(dsn, name)


def create_database(conn: psycopg.Connection[object], name: str, template: str) -> None:
    """``CREATE DATABASE name TEMPLATE template`` (UTF-8) on ``conn``'s server, its files
    copied whole where the server can (``STRATEGY FILE_COPY``, PostgreSQL 15+): less
    work for the server than writing each page of the copy to its WAL."""
    strategy = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
    conn.execute(f"CREATE DATABASE {name} TEMPLATE {template} ENCODING 'UTF8'{strategy}")  # type: ignore[arg-type]


def _create(dsn: str, name: str, template: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        create_database(conn, name, template)


def _drop(dsn: str, name: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


class TestDatabases:
    """Fresh copies of templates on one server, each made ahead of its use.

    :meth:`fresh` hands out a copy made while the previous test ran (the first one of a
    template is made on the spot) and starts making the next; used copies are dropped
    in the background. One thread does both, so the server is asked one thing at a
    time, as before. :meth:`close` drops the copies made ahead and reports a failed
    drop (a copy that failed to be made fails the test that asked for it).
    """

    __test__ = False

    def __init__(self, dsn: str, prefix: str = "mnesis_test_") -> None:
        self.dsn = dsn
        self.prefix = prefix
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-databases")
        self._ahead: dict[str, Future[str]] = {}
        self._drops: list[Future[None]] = []
        self._lock = threading.Lock()

    def _make(self, template: str) -> str:
        name = self.prefix + uuid.uuid4().hex[:12]
        _create(self.dsn, name, template)
        return name

    def _drop_later(self, name: str) -> None:
        with self._lock:
            self._drops = [f for f in self._drops if not f.done() or f.exception()]
            self._drops.append(self._worker.submit(_drop, self.dsn, name))

    @contextmanager
    def fresh(self, template: str = "template0") -> Iterator[str]:
        """The URL of a new database, a copy of ``template``, dropped (later) on exit."""
        with self._lock:
            ahead = self._ahead.pop(template, None)
        name = ahead.result() if ahead is not None else self._make(template)
        with self._lock:
            self._ahead[template] = self._worker.submit(self._make, template)
        try:
            yield _with_database(self.dsn, name)
        finally:
            self._drop_later(name)

    def close(self) -> None:
        """Drop the copies made ahead, wait for every drop; raise the first failure."""
        with self._lock:
            ahead, self._ahead = list(self._ahead.values()), {}
        for future in ahead:
            if future.exception() is None:  # one that failed to be made has nothing to drop
                self._drop_later(future.result())
        self._worker.shutdown(wait=True)
        for future in self._drops:
            future.result()


@pytest.fixture(scope="session")
def pg_databases(pg_dsn: str) -> Iterator[TestDatabases]:
    """Fresh databases on the test server, each made while the test before it ran."""
    databases = TestDatabases(pg_dsn)
    try:
        yield databases
    finally:
        databases.close()


@contextmanager
def throwaway_database(
    dsn: str, prefix: str = "mnesis_test_", template: str = "template0"
) -> Iterator[str]:
    """The URL of a new database on the server of ``dsn``, a copy of ``template`` (UTF-8),
    dropped on exit even while connections to it are open."""
    name = prefix + uuid.uuid4().hex[:12]
    with psycopg.connect(dsn, autocommit=True) as conn:
        create_database(conn, name, template)
    try:
        yield _with_database(dsn, name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


@pytest.fixture
def pg_url(pg_databases: TestDatabases) -> Iterator[str]:
    """A fresh, empty database on the test server (dropped after the test)."""
    with pg_databases.fresh() as url:
        yield url
