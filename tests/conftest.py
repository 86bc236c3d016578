"""Shared fixtures: real SQLite files in a temp dir, a fresh pool per test, the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnesis import MnesisConfig, StorePool
from mnesis.config import CompactionConfig
from mnesis.llm import FakeLLM

pytest_plugins = ["tests.pg_fixtures"]


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "mnesis.db")


@pytest.fixture
async def pool() -> AsyncIterator[StorePool]:
    p = StorePool()
    yield p
    await p.close_all()


@pytest.fixture
def fake_llm() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
def small_config() -> MnesisConfig:
    """A small window so compaction happens within a few dozen turns."""
    return MnesisConfig(
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(
            compaction_output_budget=4_000,
            prune_protect_tokens=4_000,
            prune_minimum_tokens=2_000,
        ),
    )
