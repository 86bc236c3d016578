"""The URL goes to libpq as given: the standard ``PG*`` environment variables fill in
what it leaves out, and ``options`` in the URL reaches the server, as for ``psql``."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

import psycopg
import pytest

from mnesis.store import ImmutableStore
from tests.store.contract.helpers import append_text, new_session

pytestmark = pytest.mark.postgres


async def test_pg_environment_variables_fill_in_what_the_url_leaves_out(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = urlsplit(pg_url)
    assert parts.hostname and parts.port and parts.username
    monkeypatch.setenv("PGHOST", parts.hostname)
    monkeypatch.setenv("PGPORT", str(parts.port))
    monkeypatch.setenv("PGUSER", parts.username)
    monkeypatch.setenv("PGDATABASE", parts.path.lstrip("/"))
    store = await ImmutableStore.open("postgresql://")
    try:
        session_id = await new_session(store)
        await append_text(store, session_id, "written through the PG* variables")
    finally:
        await store.close()
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM messages WHERE session_id = %s", (session_id,)
        ).fetchone()
    assert row == (1,)


async def test_options_in_the_url_reach_the_server_one_schema_per_tenant(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA tenant_a")
        conn.execute("CREATE SCHEMA tenant_b")
    sessions: dict[str, str] = {}
    for tenant in ("tenant_a", "tenant_b"):
        options = quote(f"-c search_path={tenant}")
        store = await ImmutableStore.open(f"{pg_url}?options={options}")
        try:
            sessions[tenant] = await new_session(store)
            await append_text(store, sessions[tenant], f"a message of {tenant}")
            listed = [s.id for s in await store.list_sessions()]
        finally:
            await store.close()
        assert listed == [sessions[tenant]]
    with psycopg.connect(pg_url) as conn:
        for tenant, session_id in sessions.items():
            row = conn.execute(f"SELECT session_id FROM {tenant}.messages").fetchall()
            assert row == [(session_id,)]
        public = conn.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_name = 'messages'"
        ).fetchone()
    assert public == (0,)
