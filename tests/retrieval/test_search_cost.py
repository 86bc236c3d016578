"""What keeps the candidate search cheap without changing what it finds: the session
filter only where another session holds rows, combinations holding a word no row
holds skipped, one statement per coordination level for the newest matches and one
for the crowded combinations' other matches, own-text matches asked once per fuller
combination."""

from __future__ import annotations

import sqlite3

import pytest

from mnesis import MnesisSession, StorePool
from mnesis.store.base import SearchFilter
from mnesis.store.search_query import SearchQuery
from mnesis.store.sqlite import search as sqlite_search
from tests.retrieval.helpers import levels_query, new_session
from tests.store.sqlite.helpers import sqlite_db

_OWN_TEXT = "{text_content tool_content} : ("


async def _ids(session: MnesisSession, query: SearchQuery, where: SearchFilter) -> list[str]:
    hits = await session.store.search_text(query=query, scope="messages", where=where, limit=40)
    return [h.id for h in hits]


class TestSessionFilter:
    async def test_the_only_session_finds_what_an_unfiltered_search_finds(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await new_session(db_path, pool)
        for index in range(12):
            await session.record(f"billing retry limit note {index}", f"retry ok {index}")
        query = levels_query("billing", "retry", "limit")
        mine = await _ids(session, query, SearchFilter(session_ids=[session.id]))
        assert mine
        assert mine == await _ids(session, query, SearchFilter())
        await session.close()

    async def test_another_sessions_newer_matches_neither_leak_nor_crowd_out(
        self, db_path: str, pool: StorePool
    ) -> None:
        mine = await new_session(db_path, pool)
        said = [
            (await mine.record(f"billing retry limit is {index}", "noted")).user_message_id
            for index in range(3)
        ]
        other = await new_session(db_path, pool)
        for index in range(30):
            await other.record(f"billing retry limit elsewhere {index}", "noted")
        hits = await mine.store.search_text(
            query=levels_query("billing", "retry", "limit"),
            scope="messages",
            where=SearchFilter(session_ids=[mine.id]),
            limit=40,
        )
        assert {h.session_id for h in hits} == {mine.id}
        assert set(said) <= {h.id for h in hits}
        await mine.close()
        await other.close()


class TestStatements:
    @pytest.mark.sqlite_only("traces the statements of the SQLite connection")
    async def test_each_level_takes_at_most_two_statements(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await new_session(db_path, pool)
        for word in ("alpha", "bravo", "charlie", "delta", "echo"):
            await session.record(f"{word} stands alone here", "fine")
        statements = await _traced(
            session, levels_query("alpha", "bravo", "charlie", "delta", "echo"), limit=40
        )
        matches = [s for s in statements if "MATCH" in s]
        # Absent terms (1), then newest and crowded matches of each of 5 levels (2 each);
        # one statement per combination would take at least 31.
        assert len(matches) <= 11
        await session.close()

    @pytest.mark.sqlite_only("traces the statements of the SQLite connection")
    async def test_subsets_of_a_combination_do_not_ask_again_for_own_text_matches(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await new_session(db_path, pool)
        for index in range(8):
            await session.record(f"billing retry limit question {index}?", "no idea")
        statements = await _traced(session, levels_query("billing", "retry", "limit"), limit=200)
        own = [s for s in statements if _OWN_TEXT in s]
        assert len(own) == 1
        assert '"billing" AND "retry" AND "limit"' in own[0]
        await session.close()

    @pytest.mark.sqlite_only("SQLite's limit on the terms of a compound SELECT")
    async def test_a_question_of_many_words_is_asked_in_several_statements(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await new_session(db_path, pool)
        said = await session.record("the quokka word sits among many", "ok")
        # Past SQLite's 500 terms per compound SELECT, each held by a row.
        words = ["quokka", *(f"w{index}x" for index in range(501))]
        await session.record(" ".join(words[1:]), "ok")
        statements = await _traced(session, levels_query(*words), limit=40)
        hits = await _ids(session, levels_query(*words), SearchFilter(session_ids=[session.id]))
        assert said.user_message_id in hits
        # The single words' level: 502 newest-match queries in 6 statements.
        assert sum("ORDER BY rowid DESC" in s for s in statements) >= 6
        await session.close()

    @pytest.mark.sqlite_only("compares with the walk that asks for every combination")
    async def test_skipping_combinations_with_an_absent_word_finds_the_same(
        self, db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        session = await new_session(db_path, pool)
        for index in range(10):
            await session.record(f"cache eviction note {index}", f"policy {index} kept")
        query = levels_query("cache", "zzyzxq", "eviction", "policy")
        where = SearchFilter(session_ids=[session.id])
        pruned = await _ids(session, query, where)
        monkeypatch.setattr(sqlite_search, "_absent_terms", lambda *_: set())
        assert pruned
        assert pruned == await _ids(session, query, where)
        await session.close()


async def _traced(session: MnesisSession, query: SearchQuery, limit: int) -> list[str]:
    statements: list[str] = []
    db = sqlite_db(session.store)

    def trace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(statements.append)

    await db.read(trace)
    try:
        await session.store.search_text(
            query=query, scope="messages", where=SearchFilter(session_ids=[session.id]), limit=limit
        )
    finally:
        await db.read(lambda conn: conn.set_trace_callback(None))
    return statements
