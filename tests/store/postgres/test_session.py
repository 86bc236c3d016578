"""Whole sessions on PostgreSQL: record, compact, describe and expand, through the public
session API, on a pool with a chosen number of connections. (The retrieval suite itself,
``tests/retrieval``, runs on both backends.)

The session opens its store through the pool it is given; :class:`PgPool` hands out
stores over one database with a chosen number of connections (one reproduces SQLite's
single writer, so the compacted fixture has the same DAG as on SQLite).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest

from mnesis import MnesisSession
from mnesis.store.postgres import PostgresStore
from tests.backends import PgPool
from tests.pg_fixtures import _with_database
from tests.retrieval.test_retrieval import FACTS, _config, _filled_session

pytestmark = pytest.mark.postgres


@pytest.fixture
def pool(pg_url: str) -> PgPool:
    return PgPool(pg_url)


@pytest.fixture(scope="module")
def template(pg_dsn: str) -> Iterator[tuple[str, str, dict[str, str]]]:
    """The retrieval suite's compacted session, built once into a template database."""
    name = "mnesis_tpl_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8'")  # type: ignore[arg-type]
    url = _with_database(pg_dsn, name)

    async def build() -> tuple[str, dict[str, str]]:
        # Background compaction races the next turns; how many rounds it gets (so the
        # shape of the DAG) depends on timing. One connection queues every statement in
        # order, as SQLite's single writer thread does, so the DAG is SQLite's.
        session, planted = await _filled_session("unused", PgPool(url, max_connections=1))
        await session.close()
        return session.id, planted

    session_id, planted = asyncio.run(build())
    yield name, session_id, planted
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


@pytest.fixture
async def filled(
    template: tuple[str, str, dict[str, str]], pg_dsn: str
) -> AsyncIterator[tuple[MnesisSession, dict[str, str]]]:
    """A copy of the template database (PostgreSQL copies it, file by file)."""
    source, session_id, planted = template
    name = "mnesis_copy_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {source}")  # type: ignore[arg-type]
    url = _with_database(pg_dsn, name)
    session = await MnesisSession.load(session_id, pool=PgPool(url), config=_config())
    yield session, planted
    await session.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


class TestWholeSession:
    async def test_a_session_records_compacts_and_expands_every_summary_exactly(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, planted = filled
        store = session.store
        assert isinstance(store.backend, PostgresStore)
        items = await store.get_context_items(session.id, item_type="summary")
        assert items, "the fixture compacts"
        for item in items:
            expected = await store.get_source_message_ids_deep(item.item_id)
            expanded = await session.expand(item.item_id, depth=64, token_cap=10**6)
            assert [m.id for m in expanded.messages] == expected
        described = await session.describe(planted[FACTS[0][0]])
        assert not described.in_context and described.covering_summary_id is not None
