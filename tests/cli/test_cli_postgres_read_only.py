"""Read-only commands on PostgreSQL change nothing: no migration, no schema created, no
row written; a missing or older schema is one clear line naming how to migrate.

Every table of the database (and the list of its relations) is dumped before and after
the commands; a store opened read-only refuses writes at the server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner, Result

from mnesis.cli import app
from mnesis.config import StoreConfig
from mnesis.errors import MnesisStoreError, StoreReadOnlyError
from mnesis.store import ImmutableStore
from mnesis.store.base import SessionRecord
from mnesis.store.postgres import db as postgres_db
from mnesis.store.postgres.migrations import MIGRATIONS
from mnesis.store.readonly import open_read_only
from tests.cli.recorded import record_compacted

pytestmark = pytest.mark.postgres


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _dump(url: str) -> dict[str, Any]:
    """Every relation of the public schema, and the rows of every table, sorted."""
    with psycopg.connect(url, autocommit=True) as conn:
        relations = conn.execute(
            "SELECT c.relname, c.relkind::text FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' ORDER BY 1"
        ).fetchall()
        out: dict[str, Any] = {"relations": relations}
        for name, kind in relations:
            if kind == "r":
                rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()  # type: ignore[arg-type]
                out[name] = sorted(repr(r) for r in rows)
    return out


def test_read_only_commands_leave_every_row_and_relation_as_they_were(pg_url: str) -> None:
    session_id, summary_id = asyncio.run(record_compacted(pg_url, turns=30, model="fake/ro"))
    before = _dump(pg_url)
    assert before["messages"] and before["_mnesis_migrations"]
    commands = [
        ["sessions"],
        ["show", session_id, "--full"],
        ["context", session_id],
        ["stats"],
        ["stats", session_id],
        ["grep", "module_3"],
        ["describe", summary_id],
        ["expand", summary_id],
        ["export", session_id],
        ["dag", session_id],
        ["check"],
        ["check", "--deep", "--plan"],
    ]
    for args in commands:
        result = invoke(*args, "--db", pg_url)
        assert result.exit_code == 0, (args, result.output)
    stats = json.loads(invoke("stats", "--db", pg_url, "--json").stdout)
    assert stats["messages"] == 60 and stats["db_bytes"] > 0
    assert _dump(pg_url) == before


def test_a_database_without_the_schema_is_refused_and_left_empty(pg_url: str) -> None:
    before = _dump(pg_url)
    for command in ("sessions", "stats"):
        result = invoke(command, "--db", pg_url)
        assert result.exit_code == 1, result.output
        assert "holds no mnesis schema" in result.stderr
        assert "mnesis check --repair" in result.stderr
        assert "Traceback" not in result.output
    assert _dump(pg_url) == before == {"relations": []}


def test_an_older_schema_is_refused_not_migrated(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The schema as the previous release left it: its migrations (some are functions, not
    # SQL) applied by the store itself.
    async def migrate_to_the_previous_release() -> None:
        store = await ImmutableStore.open(pg_url)
        await store.close()

    with monkeypatch.context() as patch:
        patch.setattr(postgres_db, "MIGRATIONS", MIGRATIONS[:-1])
        asyncio.run(migrate_to_the_previous_release())
    before = _dump(pg_url)
    for command in ("sessions", "check"):
        result = invoke(command, "--db", pg_url)
        assert result.exit_code == 1, result.output
        assert "older mnesis schema" in result.stderr and MIGRATIONS[-1][0] in result.stderr
    assert _dump(pg_url) == before


async def test_a_store_opened_read_only_refuses_writes_at_the_server(pg_url: str) -> None:
    with pytest.raises(MnesisStoreError, match="holds no mnesis schema"):
        await open_read_only(StoreConfig(database_url=pg_url))
    await (await ImmutableStore.open(pg_url)).close()
    store = await open_read_only(StoreConfig(database_url=pg_url))
    try:
        assert await store.list_session_ids() == []
        with pytest.raises(StoreReadOnlyError):
            await store.create_session(SessionRecord(id="sess_x", model="m"))
    finally:
        await store.close()
    assert _dump(pg_url)["sessions"] == []
