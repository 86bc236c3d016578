"""Whole sessions on PostgreSQL: record, compact, describe and expand, through the public
session API, on a pool with a chosen number of connections. (The retrieval suite itself,
``tests/retrieval``, runs on both backends.)

The session opens its store through the pool it is given; :class:`PgPool` hands out
stores over one database with a chosen number of connections (one reproduces SQLite's
single writer, so the compacted fixture has the same DAG as on SQLite).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import pytest

from mnesis import MnesisSession
from mnesis.store.postgres import PostgresStore
from tests.backends import PgPool
from tests.pg_fixtures import throwaway_database
from tests.retrieval.test_retrieval import FACTS, _config, _filled_session

pytestmark = pytest.mark.postgres


@pytest.fixture
def pool(pg_url: str) -> PgPool:
    return PgPool(pg_url)


@pytest.fixture(scope="module")
def template(pg_dsn: str) -> Iterator[tuple[str, str, dict[str, str]]]:
    """The retrieval suite's compacted session, built once into a template database."""

    async def build(url: str) -> tuple[str, dict[str, str]]:
        # Background compaction races the next turns; how many rounds it gets (so the
        # shape of the DAG) depends on timing. One connection queues every statement in
        # order, as SQLite's single writer thread does, so the DAG is SQLite's.
        session, planted = await _filled_session("unused", PgPool(url, max_connections=1))
        await session.close()
        return session.id, planted

    with throwaway_database(pg_dsn, "mnesis_tpl_") as url:
        session_id, planted = asyncio.run(build(url))
        yield urlsplit(url).path.lstrip("/"), session_id, planted


@pytest.fixture
async def filled(
    template: tuple[str, str, dict[str, str]], pg_dsn: str
) -> AsyncIterator[tuple[MnesisSession, dict[str, str]]]:
    """A copy of the template database (PostgreSQL copies it, file by file)."""
    source, session_id, planted = template
    with throwaway_database(pg_dsn, "mnesis_copy_", template=source) as url:
        session = await MnesisSession.load(session_id, pool=PgPool(url), config=_config())
        yield session, planted
        await session.close()


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
