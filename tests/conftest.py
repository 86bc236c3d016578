"""Shared fixtures: real SQLite files in a temp dir, a fresh pool per test, the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnesis import MnesisConfig, StorePool
from mnesis.config import CompactionConfig
from mnesis.llm import FakeLLM

pytest_plugins = ["tests.pg_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only(reason): about SQLite itself; its postgres instance is deselected "
        "(tests/backends.py)",
    )
    config.addinivalue_line(
        "markers",
        "postgres_only(reason): about PostgreSQL itself; its sqlite instance is deselected",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the ``postgres`` instance of ``sqlite_only`` tests and the ``sqlite``
    instance of ``postgres_only`` ones (each names its reason)."""
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("backend") if callspec is not None else None
        other = False
        for name, kept in (("sqlite_only", "sqlite"), ("postgres_only", "postgres")):
            marker = item.get_closest_marker(name)
            if marker is not None and not (marker.args and str(marker.args[0]).strip()):
                raise pytest.UsageError(f"{item.nodeid}: {name} needs a reason")
            other = other or (marker is not None and backend not in (None, kept))
        (dropped if other else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def migrated_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite file mnesis has created and migrated, nothing else in it (built once per
    run). ``db_path`` files are copies of it: a copy costs a millisecond, migrating a new
    file a hundred (the tests that are about migrating keep their own paths)."""
    # Imported here: importing tests.backends at module level would import
    # tests.pg_fixtures before pytest registers it as a plugin (no assertion rewriting).
    from tests.backends import run_outside_loop

    async def migrate(path: str) -> None:
        pool = StorePool()
        try:
            await (await pool.acquire(db_path=path)).close()
        finally:
            await pool.close_all()

    path = str(tmp_path_factory.mktemp("sqlite-template") / "mnesis.db")
    run_outside_loop(migrate(path))
    return path


@pytest.fixture
def db_path(tmp_path: Path, migrated_sqlite_template: str) -> str:
    """A SQLite file holding mnesis's (empty) schema, as a new store would."""
    from tests.backends import clone_store

    path = str(tmp_path / "mnesis.db")
    clone_store(migrated_sqlite_template, path)
    return path


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
