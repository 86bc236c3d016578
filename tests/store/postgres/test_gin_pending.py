"""PostgreSQL, migration m012: the full-text GIN indexes keep no pending list.

With ``fastupdate`` on (PostgreSQL's default) appended rows wait in the index's pending
list until (auto)vacuum merges them; every search reads the whole list and the planner
avoids the index, so a ``grep`` on a freshly written session tested every row's vectors.
``gin_clean_pending_list`` returns how many pending pages it merged: zero after an
append means a search reads no list. An older database gets its pending rows merged by
the migration, and searches exactly as before.
"""

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

_INDEXES = ("message_parts_search_gin_idx", "summaries_tsv_gin_idx")


async def _append(store: PostgresStore, sid: str, turns: int) -> None:
    batch = [
        turn_message(
            sid,
            turn,
            f"heron port{turn % 9} listens on service{turn % 13} owner{turn}",
            f"heron output{turn} port{turn % 5}",
        )
        for turn in range(turns)
    ]
    await store.append_messages(batch)


def _pending_pages(url: str) -> int:
    """Merges both indexes' pending lists; the pages that were pending."""
    with psycopg.connect(url, autocommit=True) as conn:
        return sum(
            int(conn.execute("SELECT gin_clean_pending_list(%s::regclass)", [i]).fetchone()[0])  # type: ignore[index]
            for i in _INDEXES
        )


def _fastupdate(url: str) -> dict[str, list[str] | None]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relname = ANY(%s)", [list(_INDEXES)]
        ).fetchall()
    return {name: options for name, options in rows}


async def _search(store: PostgresStore, sid: str) -> list[object]:
    out: list[object] = []
    for words in (("heron",), ("port3", "service5"), ("owner7",), ("output12",)):
        for newest in (False, True):
            query = SearchQuery(
                all_of=tuple(Term.word(w) for w in words), newest_first=newest, include_context=True
            )
            hits = await store.search_text(
                query=query, scope="messages", where=SearchFilter(session_ids=[sid]), limit=50
            )
            out.append([(h.part_id, h.rank) for h in hits])
    return out


async def test_an_append_leaves_nothing_pending(pg_store: PostgresStore, pg_url: str) -> None:
    assert _fastupdate(pg_url) == {name: ["fastupdate=off"] for name in _INDEXES}
    sid = new_id("sess")
    await pg_store.create_session(SessionRecord(id=sid, model="m"))
    await _append(pg_store, sid, 300)
    assert _pending_pages(pg_url) == 0
    hits = await _search(pg_store, sid)
    assert all(hits)


async def test_m012_merges_an_older_database_pending_rows(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = new_id("sess")
    names = [name for name, _ in MIGRATIONS]
    with monkeypatch.context() as patch:
        patch.setattr(postgres_db, "MIGRATIONS", MIGRATIONS[: names.index("m012_gin_no_pending")])
        store = await open_store(pg_url)
        await store.create_session(SessionRecord(id=sid, model="m"))
        await _append(store, sid, 300)
        before = await _search(store, sid)
        await store.db.close()
    # The older schema: the appended rows wait in the pending list.
    assert _fastupdate(pg_url) == {name: None for name in _INDEXES}
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute("SELECT count(*) FROM message_parts").fetchone()
    assert tables is not None and tables[0] > 300

    store = await open_store(pg_url)
    try:
        assert _fastupdate(pg_url) == {name: ["fastupdate=off"] for name in _INDEXES}
        assert _pending_pages(pg_url) == 0
        assert await _search(store, sid) == before
        assert all(before)
    finally:
        await store.db.close()
