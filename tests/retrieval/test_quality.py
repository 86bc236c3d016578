"""Retrieval an agent can rely on: hygiene, why a hit matched, context, regex off the loop."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool, ToolPart
from mnesis.config import RetrievalConfig
from mnesis.errors import InvalidArgumentError
from mnesis.models.ids import new_id
from mnesis.retrieval import RetrievalEngine
from mnesis.store.base import SearchFilter
from mnesis.store.postgres.search import render_tsquery
from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS
from mnesis.store.sqlite.search import render_fts5


async def _session(db_path: str, pool: StorePool, **config: object) -> MnesisSession:
    return await MnesisSession.create(
        model="fake/m", db_path=db_path, pool=pool, config=MnesisConfig(**config)
    )


class TestHygiene:
    async def test_retrieval_traces_and_the_open_question_are_not_hits(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        fact = await session.record("the deploy key lives in vault at secret/deploy", "Noted.")
        for index in range(3):
            await session.record(f"unrelated chatter {index}", "ok")
        question = await session.record(
            "where does the deploy key live?",
            [
                ToolPart(
                    tool_name="lcm_grep",
                    tool_call_id="call_1",
                    input={"query": "deploy key live"},
                    output="the deploy key lives in vault at secret/deploy (msg_x)",
                )
            ],
        )
        found = await session.grep("where does the deploy key live")
        ids = [m.id for m in found.matches]
        assert ids[0] == fact.user_message_id
        assert question.user_message_id not in ids
        assert question.assistant_message_id not in ids
        traced = await session.grep("where does the deploy key live", include_lcm_tools=True)
        assert question.assistant_message_id in [m.id for m in traced.matches]
        assert question.user_message_id not in [m.id for m in traced.matches]
        # The agent can ask for them too, through the tool.
        as_tool = json.loads(
            await session.execute_tool(
                "lcm_grep", {"query": "where does the deploy key live", "include_lcm_tools": True}
            )
        )
        assert question.assistant_message_id in [m["id"] for m in as_tool["matches"]]
        await session.close()

    async def test_an_answered_question_is_a_hit_again(self, db_path: str, pool: StorePool) -> None:
        session = await _session(db_path, pool)
        asked = await session.record("which quokka ate the sandwich?", "The grey one.")
        found = await session.grep("quokka sandwich")
        assert found.matches[0].id == asked.user_message_id
        await session.close()

    async def test_near_identical_hits_collapse_into_one_with_a_count(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        said = await session.record("the API must listen on port 8443 from now on", "Will do.")
        for index in range(5):
            await session.record(
                f"start the stack, attempt {index}",
                f"Starting the stack with make test-local; the API binds port 8443 (run {index}).",
            )
        found = await session.grep("port 8443")
        assert found.matches[0].id == said.user_message_id
        snippets = [m.snippet for m in found.matches]
        assert len(snippets) == len(set(snippets))
        stack = [m for m in found.matches if m.snippet.startswith("Starting the stack")]
        assert len(stack) == 1
        assert stack[0].duplicates == 4
        assert len(stack[0].duplicate_ids) == 4
        await session.close()


class TestWhy:
    async def test_each_hit_names_its_terms_and_a_reply_its_neighbour(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        turn = await session.record(
            "should we cache sessions with redis or memcached?",
            "Let's go with the first option, it survives restarts.",
        )
        await session.record("thanks", "You're welcome.")
        found = await session.grep("memcached sessions", scope="messages")
        by_id = {m.id: m for m in found.matches}
        asked = by_id[turn.user_message_id]
        assert asked.matched_terms == ["memcached", "sessions"]
        assert asked.context_terms == [] and asked.context_from is None
        reply = by_id[turn.assistant_message_id]
        assert reply.matched_terms == []
        assert reply.context_terms == ["memcached", "sessions"]
        assert reply.context_from == "previous turn (user)"
        assert found.matches[0].id == turn.user_message_id
        await session.close()

    async def test_regex_hits_show_the_matched_text(self, db_path: str, pool: StorePool) -> None:
        session = await _session(db_path, pool)
        await session.record("bump to v1.4.2 please", "ok")
        found = await session.grep(r"v\d+\.\d+\.\d+", mode="regex")
        assert [m.matched_terms for m in found.matches] == [["v1.4.2"]]
        assert found.matches[0].found_by == "regex"
        await session.close()


def _write_pre_m004_turn(db_path: str, session_id: str, question: str, answer: str) -> str:
    """Insert a user/assistant turn with raw SQL into a database at m003; the reply's ID."""
    conn = sqlite3.connect(db_path)
    ids = []
    with conn:
        for seq, (role, text) in enumerate((("user", question), ("assistant", answer)), 1):
            message_id = new_id("msg")
            ids.append(message_id)
            conn.execute(
                "INSERT INTO messages (id, session_id, seq, role, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (message_id, session_id, seq, role, 1_700_000_000_000 + seq),
            )
            conn.execute(
                "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, "
                "content, text_content, created_at) VALUES (?, ?, ?, 0, 'text', ?, ?, 0)",
                (
                    new_id("part"),
                    message_id,
                    session_id,
                    json.dumps({"type": "text", "text": text}),
                    text,
                ),
            )
            conn.execute(
                "INSERT INTO context_items (session_id, position, item_type, message_id, "
                "created_at) VALUES (?, ?, 'message', ?, 0)",
                (session_id, seq, message_id),
            )
    conn.close()
    return ids[1]


class TestReindex:
    async def test_an_existing_database_gets_neighbour_context_when_migrated(
        self, unopened_db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        db_path = unopened_db_path  # on SQLite, a file the old migrations create
        before = [m for m in MIGRATIONS if m[0] < "m004"]
        with monkeypatch.context() as patch:
            patch.setattr(sqlite_database, "MIGRATIONS", before)
            old_pool = StorePool()
            session = await MnesisSession.create(model="fake/m", db_path=db_path, pool=old_pool)
            question, answer = "is the pelican colony on the pier?", "Yes, since May."
            if db_path.startswith("postgres"):
                reply_id = (await session.record(question, answer)).assistant_message_id
            await session.close()
            await old_pool.close_all()
        if not db_path.startswith("postgres"):
            # The turn as the library before m004 wrote it (today's writer needs its column).
            reply_id = _write_pre_m004_turn(db_path, session.id, question, answer)
        reopened = await MnesisSession.load(session.id, db_path=db_path, pool=pool)
        found = await reopened.grep("pelican colony", scope="messages")
        reply = {m.id: m for m in found.matches}[reply_id]
        assert reply.context_terms == ["pelican", "colony"]
        later = await reopened.record("and the heron colony?", "Also there.")
        found = await reopened.grep("heron", scope="messages")
        assert reply_id not in [m.id for m in found.matches]
        assert later.assistant_message_id in [m.id for m in found.matches]
        await reopened.close()


class TestRegexOffTheLoop:
    async def test_a_catastrophic_pattern_stops_at_the_bound_and_the_loop_keeps_ticking(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        for index in range(40):
            await session.record("a" * 40 + f"b {index}", "ok")
        engine = RetrievalEngine(
            session.store, session.id, config=RetrievalConfig(regex_timeout_seconds=0.5)
        )
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        result = await engine.grep(r"(a|aa)+$", mode="regex", limit=5)
        stop.set()
        await task
        assert result.timed_out
        assert result.next_cursor is not None
        # Matching on the event loop would leave the ticker at most a tick or two.
        assert ticks >= 10
        await session.close()


class TestAtLeast:
    def test_at_least_k_terms_renders_as_their_combinations(self) -> None:
        a, b, c = Term.word("a"), Term.word("b"), Term.word("c")
        query = SearchQuery(any_of=(a, b, c), at_least=2)
        assert render_fts5(query) == '(("a" AND "b") OR ("a" AND "c") OR ("b" AND "c"))'
        assert render_tsquery(query) == "(('a' & 'b') | ('a' & 'c') | ('b' & 'c'))"
        with pytest.raises(InvalidArgumentError):
            SearchQuery(any_of=(a,), at_least=2)

    async def test_a_reply_is_found_through_all_but_one_of_the_words_of_its_question(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        await session.record("a quokka sat on the roof", "fine")
        turn = await session.record("should the quokka pen get a heated roof?", "Yes, do it.")
        terms = tuple(Term.word(w) for w in ("quokka", "heated", "roof", "decide"))
        query = SearchQuery(any_of=terms, at_least=3, context_only=True)
        where = SearchFilter(session_ids=[session.id])
        hits = await session.store.search_text(query=query, scope="messages", where=where, limit=10)
        assert [h.id for h in hits] == [turn.assistant_message_id]
        await session.close()


class TestReplies:
    async def test_the_reply_to_a_message_is_the_next_conversation_turn(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await _session(db_path, pool)
        asked = await session.record("should the pen get a roof?", "Yes, a heated one.")
        last = await session.record("thanks", "any time")
        replies = await session.store.replies_to(
            [asked.user_message_id, asked.assistant_message_id, last.assistant_message_id]
        )
        assert {k: v.id for k, v in replies.items()} == {
            asked.user_message_id: asked.assistant_message_id,
            asked.assistant_message_id: last.user_message_id,
        }
        reply = replies[asked.user_message_id]
        assert reply.text == "Yes, a heated one."
        assert reply.context is not None and "user: should the pen get a roof?" in reply.context
        await session.close()
