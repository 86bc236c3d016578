"""The ``store`` fixture every contract test runs on: one fresh store per backend.

Adding a backend is one entry in ``LOCATIONS`` (its name is the test ID) plus, for a
server, a fixture giving the URL of a fresh, empty database (``pg_url`` from
``tests/pg_fixtures.py`` starts a throwaway PostgreSQL cluster when
``MNESIS_TEST_PG_DSN`` is not set).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from mnesis.store import ImmutableStore, StorePool
from tests.store.contract.raw import RawSQL, open_raw

LOCATIONS: dict[str, Callable[[pytest.FixtureRequest], str]] = {
    "sqlite": lambda request: str(request.getfixturevalue("tmp_path") / "contract.db"),
    "postgres": lambda request: str(request.getfixturevalue("pg_url")),
}
"""Backend name → where a fresh, empty store of that backend lives (path or URL)."""


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
