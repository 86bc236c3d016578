"""PostgreSQL for the tests: one throwaway cluster per test session, one database per test.

``pg_dsn`` is the server: ``MNESIS_TEST_PG_DSN`` when set, otherwise a cluster started
here by :class:`benchmarks._pg.Cluster` (shared with the benchmarks): the binaries under
``/usr/lib/postgresql/*/bin`` in a temp directory, durability switched off, run as the
``postgres`` OS user when the test process is root. ``pytest-postgresql`` has no such
option (its issues #341 and #455 were closed without one), hence this code.

When no server can be had the tests fail with the reason; they never skip.
``pg_url`` gives each test a fresh empty database (created from ``template0``, dropped
afterwards), so tests are independent.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from benchmarks._pg import Cluster, ClusterError, with_database

__all__ = ["pg_dsn", "pg_url", "throwaway_database"]


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The URL of a PostgreSQL server the tests may create databases on."""
    given = os.environ.get("MNESIS_TEST_PG_DSN")
    if given:
        yield given
        return
    try:
        cluster = Cluster()
        url = cluster.start()
    except ClusterError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield url
    finally:
        cluster.stop()


def _with_database(dsn: str, name: str) -> str:
    return with_database(dsn, name)


@contextmanager
def throwaway_database(
    dsn: str, prefix: str = "mnesis_test_", template: str = "template0"
) -> Iterator[str]:
    """The URL of a new database on the server of ``dsn``, a copy of ``template`` (UTF-8),
    dropped on exit even while connections to it are open."""
    name = prefix + uuid.uuid4().hex[:12]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template} ENCODING 'UTF8'")  # type: ignore[arg-type]
    try:
        yield _with_database(dsn, name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


@pytest.fixture
def pg_url(pg_dsn: str) -> Iterator[str]:
    """A fresh, empty database on the test server (dropped after the test)."""
    with throwaway_database(pg_dsn) as url:
        yield url
