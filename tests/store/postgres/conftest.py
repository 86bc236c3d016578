"""Fixtures of the PostgreSQL store tests: a migrated store on a fresh database."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest

from mnesis.config import StoreConfig
from mnesis.store.postgres import PostgresDatabase, PostgresStore


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[PostgresStore]:
    """A store on a fresh database, owning it (no pool)."""
    db = PostgresDatabase(pg_url, StoreConfig(database_url=pg_url, connection_timeout=10))
    await db.open()
    store = PostgresStore(db, pool=None, pool_key=pg_url)
    yield store
    await store.close()


@pytest.fixture
async def store(pg_store: PostgresStore) -> PostgresStore:
    """The contract suite's ``store``, on PostgreSQL."""
    return pg_store


@pytest.fixture
def raw(pg_store: PostgresStore, pg_url: str) -> Iterator[psycopg.Connection]:
    """A second, plain psycopg connection to the store's database (autocommit)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn
