"""The ``store`` fixture every contract test runs on: one fresh store per backend.

Adding a backend is one entry in ``LOCATIONS`` (its name is the test ID) plus, for a
server, a fixture giving the URL of a fresh database (``pg_dsn`` from
``tests/pg_fixtures.py`` starts a throwaway PostgreSQL cluster when
``MNESIS_TEST_PG_DSN`` is not set). A fresh store is a copy of one mnesis migrated
once per run (``migrated_sqlite_template``, ``migrated_pg_template``): the contract is
about what a store does, not about migrating (``tests/store/sqlite/test_migrations.py``
and ``tests/store/postgres/test_database.py`` are).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from mnesis.store import ImmutableStore, StorePool
from tests.backends import clone_store, migrated_pg_template
from tests.pg_fixtures import TestDatabases
from tests.store.contract.raw import RawSQL, open_raw

__all__ = ["LOCATIONS", "migrated_pg_template", "migrated_pg_url", "raw", "store"]


def _sqlite_location(request: pytest.FixtureRequest) -> str:
    path = str(request.getfixturevalue("tmp_path") / "contract.db")
    clone_store(str(request.getfixturevalue("migrated_sqlite_template")), path)
    return path


@pytest.fixture
def migrated_pg_url(pg_databases: TestDatabases, migrated_pg_template: str) -> Iterator[str]:
    """The URL of a new database holding mnesis's empty schema (dropped afterwards)."""
    with pg_databases.fresh(migrated_pg_template) as url:
        yield url


LOCATIONS: dict[str, Callable[[pytest.FixtureRequest], str]] = {
    "sqlite": _sqlite_location,
    "postgres": lambda request: str(request.getfixturevalue("migrated_pg_url")),
}
"""Backend name → where a fresh store of that backend lives (path or URL), holding
mnesis's empty schema."""


@pytest.fixture(
    params=[
        pytest.param(name, marks=[pytest.mark.postgres] if name == "postgres" else [])
        for name in LOCATIONS
    ]
)
async def store(request: pytest.FixtureRequest, pool: StorePool) -> AsyncIterator[ImmutableStore]:
    """A fresh, empty store of each backend, through the public facade only."""
    opened = await pool.acquire(db_path=LOCATIONS[request.param](request))
    yield opened
    await opened.close()


@pytest.fixture
def raw(store: ImmutableStore, request: pytest.FixtureRequest) -> Iterator[RawSQL]:
    """A second, plain connection to the database under ``store`` (autocommit)."""
    conn = open_raw(store, request)
    yield conn
    conn.close()
