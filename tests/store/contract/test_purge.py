"""``purge_session`` and import progress, on every backend.

Purging removes exactly one session (with its sub-agent sessions) and leaves the
append-only guard in force for everything else, inside and after the purge."""

from __future__ import annotations

import sqlite3

import pytest

from mnesis.errors import SessionNotFoundError
from mnesis.integrity import IntegrityChecker
from mnesis.store import ImmutableStore
from mnesis.store.base import ImportSource, SearchFilter
from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.sqlite import SQLiteStore
from tests.store.contract.helpers import append_text, make_commit, new_session


async def _session_with_summary(store: ImmutableStore, word: str) -> str:
    session_id = await new_session(store)
    for i in range(4):
        await append_text(store, session_id, f"{word} message {i}")
    items = await store.get_context_items(session_id)
    await store.commit_compaction(make_commit(session_id, items[:2], content=f"{word} summary"))
    return session_id


async def _hits(store: ImmutableStore, word: str) -> int:
    found = await store.search_text(
        query=SearchQuery(any_of=(Term(((word,),)),)),
        scope="messages",
        where=SearchFilter(session_ids=None),
        limit=50,
    )
    return len(found)


async def test_purge_removes_one_session_and_its_children_only(store: ImmutableStore) -> None:
    doomed = await _session_with_summary(store, "zanzibar")
    child = await new_session(store, parent_id=doomed)
    await append_text(store, child, "zanzibar child")
    kept = await _session_with_summary(store, "quixotic")
    before = await IntegrityChecker(store).run(kept)

    report = await store.purge_session(doomed)

    assert set(report.session_ids) == {doomed, child}
    assert report.rows["messages"] == 6 and report.rows["summaries"] == 1
    for gone in (doomed, child):
        with pytest.raises(SessionNotFoundError):
            await store.get_session(gone)
    assert await store.list_session_ids() == [kept]
    assert await _hits(store, "zanzibar") == 0
    assert await _hits(store, "quixotic") == 4
    after = await IntegrityChecker(store).run()
    assert after.sessions_checked == 1 and after.violations == before.violations


async def test_the_guard_stays_in_force_after_a_purge(store: ImmutableStore) -> None:
    await _session_with_summary(store, "kept")
    await store.purge_session(await _session_with_summary(store, "gone"))
    location = store.backend.location
    for table in ("messages", "message_parts", "summaries", "summary_messages", "sessions"):
        if isinstance(store.backend, SQLiteStore):
            with sqlite3.connect(location) as conn, pytest.raises(sqlite3.DatabaseError) as caught:
                conn.execute(f"DELETE FROM {table}")
        else:
            import psycopg

            with psycopg.connect(location) as conn, pytest.raises(psycopg.Error) as caught:
                conn.execute(f"DELETE FROM {table}")
        assert "mnesis append-only" in str(caught.value)


async def test_purging_an_unknown_session_is_not_found(store: ImmutableStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.purge_session("sess_01ARZ3NDEKTSV4RRFFQ69G5FAV")


async def test_import_progress_round_trips_and_goes_with_its_session(
    store: ImmutableStore,
) -> None:
    session_id = await new_session(store)
    source = ImportSource(
        source_key="claude-code:/tmp/a.jsonl",
        format="claude-code",
        path="/tmp/a.jsonl",
        session_id=session_id,
        byte_offset=120,
        lines=3,
        fingerprint="abc",
        messages=2,
        state={"sessions": {"": session_id}},
    )
    assert await store.get_import_source(source.source_key) is None
    await store.put_import_source(source)
    source.byte_offset = 240
    await store.put_import_source(source)
    got = await store.get_import_source(source.source_key)
    assert got is not None and got.byte_offset == 240 and got.state == source.state
    await store.purge_session(session_id)
    assert await store.get_import_source(source.source_key) is None
