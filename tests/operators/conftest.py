"""This directory runs on both store backends (``db_path`` is a file or a PostgreSQL URL)."""

from collections.abc import AsyncIterator

import pytest

from mnesis import MnesisSession, StorePool
from mnesis.llm import FakeLLM
from tests.backends import backend, db_path, migrated_pg_template, unopened_db_path
from tests.operators.agentic import NO_AUTO_COMPACTION

__all__ = ["backend", "db_path", "migrated_pg_template", "parent", "unopened_db_path"]


@pytest.fixture
async def parent(db_path: str, pool: StorePool) -> AsyncIterator[MnesisSession]:
    """A session on ``db_path`` (so the database exists) for sub-sessions to hang from."""
    session = await MnesisSession.create(
        model="fake/parent", db_path=db_path, pool=pool, llm=FakeLLM(), config=NO_AUTO_COMPACTION
    )
    yield session
    await session.close()
