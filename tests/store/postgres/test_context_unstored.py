"""PostgreSQL, migration m009: the neighbour context is indexed (``context_tsv``), not
stored; an older database migrates and searches exactly as before."""

from __future__ import annotations

import psycopg
import pytest

from mnesis.models.ids import new_id
from mnesis.store import SessionRecord
from mnesis.store.base import SearchFilter
from mnesis.store.postgres import PostgresStore
from mnesis.store.postgres import db as postgres_db
from mnesis.store.postgres.migrations import MIGRATIONS
from mnesis.store.search_query import SearchQuery, Term
from tests.store.postgres.filled import open_store, turn_message

pytestmark = pytest.mark.postgres


async def _append(store: PostgresStore, sid: str, first: int, turns: int) -> None:
    for turn in range(first, first + turns):
        message = turn_message(sid, turn, f"heron turn{turn} word{turn % 7}", f"heron output{turn}")
        await store.append_messages([message])


async def _search(store: PostgresStore, sid: str) -> list[object]:
    out: list[object] = []
    for words, context_only in ((("heron",), False), (("word3",), True), (("word5",), False)):
        for newest in (False, True):
            query = SearchQuery(
                all_of=tuple(Term.word(w) for w in words),
                newest_first=newest,
                context_only=context_only,
                include_context=True,
            )
            hits = await store.search_text(
                query=query, scope="messages", where=SearchFilter(session_ids=[sid]), limit=200
            )
            out.append([(h.part_id, h.rank, h.context) for h in hits])
    return out


def _stored_contexts(url: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(search_context), count(*) FILTER (WHERE context_tsv <> ''::tsvector) "
            "FROM message_parts"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


async def test_m009_clears_the_column_and_searches_exactly_as_before(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = new_id("sess")
    names = [name for name, _ in MIGRATIONS]
    with monkeypatch.context() as patch:
        patch.setattr(postgres_db, "MIGRATIONS", MIGRATIONS[: names.index("m009_context_unstored")])
        store = await open_store(pg_url)
        await store.create_session(SessionRecord(id=sid, model="m"))
        await _append(store, sid, 0, 40)
        before = await _search(store, sid)
        await store.db.close()
    stored, indexed = _stored_contexts(pg_url)
    assert stored == indexed == 40

    store = await open_store(pg_url)
    try:
        assert await _search(store, sid) == before
        assert all(before)
        assert _stored_contexts(pg_url) == (0, 40)
        await _append(store, sid, 40, 10)
        # New parts are indexed with their context, which is not kept.
        assert _stored_contexts(pg_url) == (0, 50)
        grown = await _search(store, sid)
    finally:
        await store.db.close()
    assert len(grown[0]) > len(before[0])
