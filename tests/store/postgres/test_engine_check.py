"""PostgreSQL's own consistency checks: what runs, what is unavailable, what is found."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from typer.testing import CliRunner

from mnesis.cli import app
from mnesis.config import StoreConfig
from mnesis.integrity import IntegrityChecker, ViolationKind
from mnesis.store import ImmutableStore
from mnesis.store.postgres import PostgresDatabase, PostgresStore
from tests.store.contract.helpers import append_text, new_session

pytestmark = pytest.mark.postgres

NOT_INSTALLED = "amcheck (the extension is not installed in this database"


def _checker(store: PostgresStore, *, deep: bool = False) -> IntegrityChecker:
    return IntegrityChecker(ImmutableStore.over(store), engine_check=True, deep=deep)


async def test_without_amcheck_it_is_reported_unavailable_not_passed(
    pg_store: PostgresStore,
) -> None:
    await append_text(pg_store, await new_session(pg_store), "hello")
    check = await pg_store.engine_check()
    assert check.problems == []
    assert check.ran == ["index validity"]
    assert any(item.startswith(NOT_INSTALLED) for item in check.unavailable)
    # The throwaway test cluster is initialised without data checksums.
    assert any(item.startswith("page checksums") for item in check.unavailable)


async def test_with_amcheck_every_index_and_with_full_every_table_is_verified(
    pg_store: PostgresStore, raw: psycopg.Connection
) -> None:
    sid = await new_session(pg_store)
    for i in range(5):
        await append_text(pg_store, sid, f"message {i}")
    raw.execute("CREATE EXTENSION amcheck")
    btrees = raw.execute(
        "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename = 'messages'"
    ).fetchone()
    assert btrees is not None and btrees[0] >= 2

    quick = await pg_store.engine_check()
    full = await pg_store.engine_check(full=True)

    assert quick.problems == [] and full.problems == []
    assert not any(item.startswith("amcheck") for item in quick.unavailable + full.unavailable)
    assert any(r.startswith("amcheck bt_index_check (") for r in quick.ran)
    assert any(r.startswith("amcheck bt_index_check heapallindexed (") for r in full.ran)
    assert any(r.startswith("amcheck verify_heapam (") for r in full.ran)
    report = await _checker(pg_store, deep=True).run()
    assert report.ok, report.violations
    assert report.engine_checks == full.ran


async def test_an_invalid_index_is_an_engine_violation(
    pg_store: PostgresStore, raw: psycopg.Connection, pg_url: str
) -> None:
    sid = await new_session(pg_store)
    await append_text(pg_store, sid, "one")
    await append_text(pg_store, sid, "two")
    # A unique index built concurrently over duplicates fails and stays behind invalid.
    with pytest.raises(psycopg.errors.UniqueViolation):
        raw.execute("CREATE UNIQUE INDEX CONCURRENTLY broken_idx ON messages (session_id)")

    check = await pg_store.engine_check()

    assert check.problems == ["index broken_idx on messages is not valid"]
    report = await _checker(pg_store).run()
    assert report.by_kind() == {ViolationKind.ENGINE_INTEGRITY.value: 1}
    # The command runs its own event loop: off this test's loop.
    result = await asyncio.to_thread(CliRunner().invoke, app, ["check", "--db", pg_url, "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert "broken_idx" in data["violations"][0]["detail"]
    assert any(item.startswith(NOT_INSTALLED) for item in data["engine_checks_unavailable"])
    text = await asyncio.to_thread(CliRunner().invoke, app, ["check", "--db", pg_url])
    assert "engine check not available: amcheck" in " ".join(text.output.split())


@pytest.fixture
def plain_role_url(pg_url: str, raw: psycopg.Connection) -> Iterator[str]:
    """``pg_url`` as a new role that is not a superuser and may use the store's tables."""
    role = "mnesis_plain_" + uuid.uuid4().hex[:8]
    raw.execute(f"CREATE ROLE {role} LOGIN")  # type: ignore[arg-type]
    raw.execute(f"GRANT ALL ON SCHEMA public TO {role}")  # type: ignore[arg-type]
    raw.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")  # type: ignore[arg-type]
    raw.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}")  # type: ignore[arg-type]
    parts = urlsplit(pg_url)
    host = parts.netloc.rsplit("@", 1)[-1]
    try:
        yield urlunsplit(parts._replace(netloc=f"{role}@{host}"))
    finally:
        raw.execute(f"DROP OWNED BY {role}")  # type: ignore[arg-type]
        raw.execute(f"DROP ROLE {role}")  # type: ignore[arg-type]


async def test_amcheck_installed_but_not_granted_is_unavailable(
    pg_store: PostgresStore, raw: psycopg.Connection, plain_role_url: str
) -> None:
    await append_text(pg_store, await new_session(pg_store), "hello")
    raw.execute("CREATE EXTENSION amcheck")
    db = PostgresDatabase(
        plain_role_url, StoreConfig(database_url=plain_role_url, connection_timeout=10)
    )
    await db.open()
    plain = PostgresStore(db, pool=None, pool_key=plain_role_url)
    try:
        check = await plain.engine_check(full=True)
    finally:
        await plain.close()
    assert check.problems == []
    assert any("may not execute bt_index_check" in item for item in check.unavailable)
    assert not any(r.startswith("amcheck") for r in check.ran)
