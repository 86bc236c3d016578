"""PostgreSQL, migration m015: a database written before it gets ``session_usage`` on
opening and reads the same usage; a read-only opening reads the usage of messages newer
than the kept row without writing."""

from __future__ import annotations

import pytest

from mnesis.config import StoreConfig
from mnesis.models.ids import new_id
from mnesis.models.parts import TextPart
from mnesis.models.tokens import TokenUsage
from mnesis.store import SessionRecord
from mnesis.store.postgres import PostgresStore
from mnesis.store.postgres import db as postgres_db
from mnesis.store.postgres.migrations import MIGRATIONS
from mnesis.store.readonly import open_read_only
from tests.backends import fetch
from tests.store.contract.helpers import make_message
from tests.store.postgres.filled import open_store

pytestmark = pytest.mark.postgres

_BEFORE = MIGRATIONS[: [name for name, _ in MIGRATIONS].index("m015_session_usage")]


def _fresh(url: str, sid: str) -> tuple[int, ...]:
    row = fetch(
        url,
        "SELECT SUM(tokens_input), SUM(tokens_output), SUM(tokens_cache_read), "
        "SUM(tokens_cache_write), SUM(tokens_total) FROM messages WHERE session_id = ?",
        sid,
    )[0]
    return tuple(int(v) for v in row)


async def _append(store: PostgresStore, sid: str, first: int, count: int) -> None:
    for n in range(first, first + count):
        usage = TokenUsage(input=n + 1, output=2 * n, cache_write=5)
        await store.append_message(
            make_message(sid, "assistant", tokens=usage), [TextPart(text=f"turn {n}")]
        )


async def _usage(store: PostgresStore, sid: str) -> tuple[int, ...]:
    u = await store.session_token_usage(sid)
    return (u.input, u.output, u.cache_read, u.cache_write, u.total)


async def test_an_older_database_migrates_and_keeps_its_sums_from_then_on(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = new_id("sess")
    with monkeypatch.context() as patch:
        patch.setattr(postgres_db, "MIGRATIONS", _BEFORE)
        store = await open_store(pg_url)
        await store.create_session(SessionRecord(id=sid, model="m"))
        await _append(store, sid, 0, 6)
        assert await _usage(store, sid) == _fresh(pg_url, sid)
        await store.db.close()
    assert fetch(pg_url, "SELECT to_regclass('session_usage')") == [(None,)]

    store = await open_store(pg_url)
    try:
        assert await _usage(store, sid) == _fresh(pg_url, sid)
        assert fetch(pg_url, "SELECT session_id, upto_seq FROM session_usage") == [(sid, 6)]
        await _append(store, sid, 6, 3)
        reader = await open_read_only(StoreConfig(database_url=pg_url))
        try:
            u = await reader.session_token_usage(sid)
            assert (u.input, u.output, u.cache_read, u.cache_write, u.total) == _fresh(pg_url, sid)
        finally:
            await reader.close()
        assert fetch(pg_url, "SELECT upto_seq FROM session_usage") == [(6,)]
        assert await _usage(store, sid) == _fresh(pg_url, sid)
        assert fetch(pg_url, "SELECT upto_seq FROM session_usage") == [(9,)]
    finally:
        await store.db.close()
