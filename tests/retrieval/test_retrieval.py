"""Retrieval: whatever compaction hides can be found, described and expanded again."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator, Iterator

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool, TextPart, ToolPart
from mnesis.compaction.ledger_read import read_ledger
from mnesis.config import CompactionConfig, RetrievalConfig
from mnesis.errors import (
    InvalidArgumentError,
    MessageNotFoundError,
    OutOfScopeError,
    SummaryNotFoundError,
)
from mnesis.llm import FakeLLM, Respond, ToolCall
from mnesis.mcp.render import render_result
from mnesis.retrieval import RetrievalEngine, parse_query
from mnesis.retrieval.describe import BRIEF_ENTITIES, summary_ledger_brief
from mnesis.retrieval.tools import run_lcm_tool
from mnesis.store import SummaryDAGStore
from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.sqlite.search import render_fts5
from tests.backends import build_pool, fetch, store_copy, template_location

FACTS = [
    (
        "Heads up: we moved the API to port 8443 after the TLS change.",
        "which port did we move the API to?",
    ),
    (
        "Never modify anything under migrations/ without a review.",
        "what must we not modify without review",
    ),
    ("The staging database is db-staging-7.internal for now.", "what is the staging database host"),
    (
        "We chose argon2id over bcrypt for password hashing.",
        "which password hashing algorithm did we choose",
    ),
    ("记忆管理系统将每条消息写入只追加的存储", "只追加的存储"),
]


def _config() -> MnesisConfig:
    return MnesisConfig(
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(
            compaction_output_budget=4_000,
            compaction_model="extractive",
            prune_protect_tokens=4_000,
            prune_minimum_tokens=2_000,
        ),
    )


async def _filled_session(
    db_path: str, pool: StorePool, llm: FakeLLM | None = None
) -> tuple[MnesisSession, dict[str, str]]:
    session = await MnesisSession.create(
        model="fake/model", db_path=db_path, pool=pool, config=_config(), llm=llm
    )
    planted: dict[str, str] = {}
    for index in range(220):
        if index % 30 == 5 and index // 30 < len(FACTS):
            fact, _ = FACTS[index // 30]
            result = await session.record(fact, "Noted.")
            planted[fact] = result.user_message_id
        await session.record(
            f"step {index}: run the unit tests of module_{index}.py",
            [
                TextPart(text=f"Running the tests of module_{index}."),
                ToolPart(
                    tool_name="bash",
                    tool_call_id=f"call_{index}",
                    input={"command": f"pytest tests/test_module_{index}.py"},
                    output=f"collected 12 items\n{'.' * 12}\n" + "ok line\n" * 400,
                ),
            ],
        )
        # Each turn's background compaction finishes before the next turn: the DAG's
        # shape then depends on the texts alone, not on how busy the machine is.
        await session.compaction_engine.wait_for_pending()
    await session.compact()
    await session.compaction_engine.wait_for_pending()
    return session, planted


@pytest.fixture(scope="module")
def template_db(
    backend: str, request: pytest.FixtureRequest
) -> Iterator[tuple[str, str, dict[str, str]]]:
    """Build the compacted session once per module and backend; tests get a copy.

    The build is deterministic (extractive summaries, fixed texts): 220 turns of large
    tool outputs leave pruned tool outputs, leaf summaries over the oldest messages and
    several summaries in the context. Tests assert these facts; they never skip on them.
    """
    with template_location(backend, request, "retrieval") as path:

        async def build() -> tuple[str, dict[str, str]]:
            pool = build_pool(path)
            session, planted = await _filled_session(path, pool)
            await session.close()
            await pool.close_all()
            return session.id, planted

        session_id, planted = asyncio.run(build())
        yield path, session_id, planted


@pytest.fixture
async def filled(
    template_db: tuple[str, str, dict[str, str]], pool: StorePool, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[MnesisSession, dict[str, str]]]:
    source, session_id, planted = template_db
    with store_copy(source, request) as db_path:
        session = await MnesisSession.load(session_id, db_path=db_path, pool=pool, config=_config())
        yield session, planted
        await session.close()
        await pool.close_all()


class TestQueryParsing:
    def test_a_question_becomes_an_or_of_its_content_words(self) -> None:
        parsed = parse_query("which port did we move the API to?")
        assert parsed.required == []
        assert set(parsed.optional) == {Term.word("port"), Term.word("move"), Term.word("api")}

    def test_quoted_phrases_are_required(self) -> None:
        parsed = parse_query('"line of output" errors')
        assert parsed.required == [Term.phrase("line", "of", "output")]
        assert parsed.optional == [Term.word("errors")]

    def test_operators_and_quotes_in_user_text_are_neutralised(self) -> None:
        parsed = parse_query('NEAR(a b) AND "unterminated * OR col:x')
        assert parsed.tiers
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        for tier in parsed.tiers:
            conn.execute("SELECT * FROM t WHERE t MATCH ?", (render_fts5(tier),)).fetchall()

    def test_punctuated_identifiers_become_phrases(self) -> None:
        # The words' phrase, and the piece as typed (PostgreSQL keeps a host name whole).
        expected = Term((("db", "staging", "7", "internal"),), ("db-staging-7.internal",))
        assert expected in parse_query("db-staging-7.internal").optional


class TestGrepFindsCompactedFacts:
    async def test_every_planted_fact_is_found_by_a_natural_language_question(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, planted = filled
        for fact, question in FACTS:
            result = await session.grep(question, limit=5)
            ids = [m.id for m in result.matches]
            assert planted[fact] in ids, (question, [m.snippet for m in result.matches])

    async def test_compacted_matches_name_the_summary_that_covers_them(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, planted = filled
        fact = FACTS[0][0]
        result = await session.grep("port 8443", scope="messages")
        match = next(m for m in result.matches if m.id == planted[fact])
        assert not match.in_context
        assert match.covering_summary_id is not None
        assert planted[fact] in result.groups[match.covering_summary_id]
        expanded = await session.expand(match.covering_summary_id, depth=10, token_cap=10**6)
        assert any(m.id == planted[fact] for m in expanded.messages)

    async def test_search_within_a_summary_only_returns_its_messages(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        summary_id = (await session.grep("port 8443")).matches[0].covering_summary_id
        assert summary_id is not None
        under = set(await SummaryDAGStore(session.store).get_source_message_ids(summary_id))
        result = await session.grep("tests module", summary_id=summary_id, limit=50)
        assert result.matches
        assert {m.id for m in result.matches} <= under

    async def test_pagination_returns_disjoint_pages(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        first = await session.grep("unit tests module", limit=5, scope="messages")
        assert first.next_cursor is not None
        second = await session.grep(
            "unit tests module", limit=5, scope="messages", cursor=first.next_cursor
        )
        assert second.matches
        assert not {m.id for m in first.matches} & {m.id for m in second.matches}

    async def test_time_range_restricts_matches(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        everything = await session.grep("unit tests module", limit=200, scope="messages")
        newest = max(m.created_at for m in everything.matches)
        recent = await session.grep("unit tests module", limit=200, since=newest, scope="messages")
        assert recent.matches and all(m.created_at >= newest for m in recent.matches)
        assert len(recent.matches) < len(everything.matches)

    async def test_cjk_text_is_searchable(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, planted = filled
        result = await session.grep("只追加的存储", limit=5)
        assert planted[FACTS[4][0]] in [m.id for m in result.matches]
        result = await session.grep("存储", limit=5)
        assert planted[FACTS[4][0]] in [m.id for m in result.matches]

    async def test_regex_search_finds_patterns(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, planted = filled
        result = await session.grep(r"port \d{4}\b", mode="regex", scope="messages")
        assert planted[FACTS[0][0]] in [m.id for m in result.matches]

    async def test_summaries_are_searchable(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        result = await session.grep("module", scope="summaries")
        assert result.matches and all(m.kind == "summary" for m in result.matches)


class TestGrepBadInput:
    @pytest.mark.parametrize("query", ["", "   ", None, 42])
    async def test_empty_or_non_string_query_is_rejected(
        self, filled: tuple[MnesisSession, dict[str, str]], query: object
    ) -> None:
        session, _ = filled
        with pytest.raises(InvalidArgumentError):
            await session.grep(query)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        "query",
        ['"', "NEAR(", "a AND OR b", "col:x", "*", "^", "'; DROP TABLE messages; --", "\x00"],
    )
    async def test_fts_syntax_in_user_text_never_raises(
        self, filled: tuple[MnesisSession, dict[str, str]], query: str
    ) -> None:
        session, _ = filled
        result = await session.grep(query)
        assert result.mode == "full_text"

    async def test_invalid_regex_is_a_typed_error(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        with pytest.raises(InvalidArgumentError):
            await session.grep("(unclosed", mode="regex")

    async def test_catastrophic_regex_is_bounded_in_time(
        self, db_path: str, pool: StorePool
    ) -> None:
        config = _config()
        config.retrieval = RetrievalConfig(regex_timeout_seconds=0.3)
        session = await MnesisSession.create(
            model="fake/model", db_path=db_path, pool=pool, config=config
        )
        for _ in range(3):
            await session.record("a" * 30_000 + "!", "ok")
        result = await asyncio.wait_for(
            session.grep(r"(?:a|aa)+(?:a|aa)+(?:a|aa)+b", mode="regex"), timeout=20
        )
        assert result.timed_out or not result.matches
        await session.close()

    @pytest.mark.parametrize("limit", [0, -1, "5", 1.5, True])
    async def test_bad_limits_are_rejected(
        self, filled: tuple[MnesisSession, dict[str, str]], limit: object
    ) -> None:
        session, _ = filled
        with pytest.raises(InvalidArgumentError):
            await session.grep("tests", limit=limit)  # type: ignore[arg-type]

    async def test_huge_limits_are_clamped(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        result = await session.grep("tests", limit=10**9)
        assert len(result.matches) <= session.config.retrieval.grep_max_limit

    async def test_a_forged_cursor_is_rejected(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        with pytest.raises(InvalidArgumentError):
            await session.grep("tests", cursor="not-a-cursor")

    async def test_bad_mode_and_scope_are_rejected(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        with pytest.raises(InvalidArgumentError):
            await session.grep("tests", mode="semantic")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            await session.grep("tests", scope="files")  # type: ignore[arg-type]


class TestScope:
    async def test_search_is_scoped_to_the_callers_session(
        self, db_path: str, pool: StorePool
    ) -> None:
        one = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        two = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        await one.record("the secret word is pineapple", "ok")
        await two.record("nothing to see", "ok")
        assert not (await two.grep("pineapple")).matches
        explicit = await two.grep("pineapple", session_ids=[one.id])
        assert {m.session_id for m in explicit.matches} == {one.id}
        assert (await two.grep("pineapple", all_sessions=True)).matches
        await one.close()
        await two.close()

    async def test_ids_of_another_session_are_out_of_scope(
        self, db_path: str, pool: StorePool
    ) -> None:
        one = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        two = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        recorded = await one.record("hello", "hi")
        with pytest.raises(OutOfScopeError):
            await two.describe(recorded.user_message_id)
        await one.close()
        await two.close()

    async def test_a_restricted_engine_refuses_other_sessions(
        self, db_path: str, pool: StorePool
    ) -> None:
        one = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        other = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        engine = RetrievalEngine(one.store, one.id, allowed_session_ids=[])
        with pytest.raises(OutOfScopeError):
            await engine.grep("x", session_ids=[other.id])
        await one.close()
        await other.close()


class TestDescribe:
    async def test_summary_description_has_lineage_span_and_text(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        items = await session.store.get_context_items(session.id, item_type="summary")
        described = await session.describe(items[0].item_id)
        assert described.kind == "summary"
        assert described.in_context
        assert described.content
        assert described.source_message_count > 0
        assert described.child_summary_ids or described.direct_source_message_ids

    async def test_message_description_names_its_covering_summary(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, planted = filled
        described = await session.describe(planted[FACTS[0][0]])
        assert described.kind == "message"
        assert not described.in_context
        assert described.covering_summary_id is not None
        assert described.leaf_summary_ids

    async def test_a_summary_description_briefs_what_its_compaction_dropped(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        rows, _ = await read_ledger(session.store, session.id)
        # The summary whose compaction dropped the most: more than the brief lists.
        row = max((r for r in rows if r.summary_id), key=lambda r: r.ledger.dropped_total)
        full = row.ledger
        assert row.summary_id is not None and full.dropped_total > BRIEF_ENTITIES
        described = await session.describe(row.summary_id)
        assert described.kind == "summary"
        brief = described.ledger
        assert brief is not None
        assert (brief.tokens_removed, brief.tokens_added) == (
            full.tokens_removed,
            full.tokens_added,
        )
        assert (brief.entities_seen, brief.dropped_total) == (
            full.entities_seen,
            full.dropped_total,
        )
        assert brief.dropped_by_kind == dict(Counter(e.kind for e in full.dropped))
        assert len(brief.dropped) == BRIEF_ENTITIES
        assert brief.more_dropped == full.dropped_total - BRIEF_ENTITIES
        assert all(e in full.dropped for e in brief.dropped)
        # Taken in turn from each kind, not the first ten of the first kind.
        assert len({e.kind for e in brief.dropped}) == min(
            BRIEF_ENTITIES, len(brief.dropped_by_kind)
        )
        covered = full.removed_message_ids or full.removed_summary_ids
        assert brief.covered_count == len(covered)
        assert brief.covered_ids == covered[:BRIEF_ENTITIES]
        assert row.summary_id in brief.see and f"mnesis compactions {session.id}" in brief.see
        # What a model reads: the lcm_describe tool and its text rendering.
        engine = RetrievalEngine(session.store, session.id)
        data = await run_lcm_tool(engine, "lcm_describe", {"id": row.summary_id})
        assert data["ledger"]["dropped_total"] == full.dropped_total
        text = render_result("lcm_describe", data)
        assert f"{full.tokens_removed:,} tokens -> {full.tokens_added:,}" in text
        assert f"{brief.more_dropped:,} more" in text
        assert brief.dropped[0].value in text and f"mnesis compactions {session.id}" in text

    async def test_a_summary_without_a_ledger_is_described_without_one(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        items = await session.store.get_context_items(session.id, item_type="summary")
        record = await session.store.get_summary(items[0].item_id)
        assert (await session.describe(record.id)).ledger is not None
        bare = dataclasses.replace(record, message_id=None)
        assert await summary_ledger_brief(session.store, bare) is None

    @pytest.mark.parametrize(
        "bad", ["", "sum_", "sess_01M8098P77C2Q28YTVQKP53YRE", "x" * 500, "msg_lower"]
    )
    async def test_malformed_ids_are_invalid_arguments(
        self, filled: tuple[MnesisSession, dict[str, str]], bad: str
    ) -> None:
        session, _ = filled
        with pytest.raises(InvalidArgumentError):
            await session.describe(bad)

    async def test_unknown_ids_are_not_found(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        with pytest.raises(SummaryNotFoundError):
            await session.describe("sum_01M8098P77C2Q28YTVQKP53YRE")
        with pytest.raises(MessageNotFoundError):
            await session.describe("msg_01M8098P77C2Q28YTVQKP53YRE")
        with pytest.raises(KeyError):
            await session.describe("msg_01M8098P77C2Q28YTVQKP53YRE")


class TestExpand:
    async def test_every_summary_expands_to_exactly_its_canonical_sources(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        dag = SummaryDAGStore(session.store)
        summary_ids = [r[0] for r in fetch(session.store.location, "SELECT id FROM summaries")]
        assert summary_ids
        for summary_id in summary_ids:
            expected = await dag.get_source_message_ids(summary_id)
            expanded = await session.expand(summary_id, depth=64, token_cap=10**6)
            assert [m.id for m in expanded.messages] == expected
            assert not expanded.truncated
            originals = await session.retrieval.source_messages(summary_id)
            assert [m.id for m in originals] == expected

    async def test_expand_shows_tombstoned_tool_output_in_full(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        # The oldest pruned message: compaction summarises the oldest messages first.
        rows = fetch(
            session.store.location,
            "SELECT p.message_id FROM message_parts p JOIN messages m ON m.id = p.message_id"
            " WHERE p.compacted_at IS NOT NULL ORDER BY m.seq, p.ordinal LIMIT 1",
        )
        assert rows, "the fixture prunes tool outputs"
        row = rows[0]
        leaf = (await session.describe(row[0])).leaf_summary_ids
        assert leaf, "the fixture summarises its oldest pruned message"
        expanded = await session.expand(leaf[0], depth=1, token_cap=10**6)
        text = next(m.text for m in expanded.messages if m.id == row[0])
        assert "ok line" in text and "compacted at" not in text

    async def test_token_cap_truncates_and_says_where_to_continue(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        items = await session.store.get_context_items(session.id, item_type="summary")
        result = await session.expand(items[0].item_id, depth=8, token_cap=200)
        assert result.truncated
        assert result.estimated_tokens <= 200
        assert result.unexpanded_summary_ids

    async def test_depth_one_of_a_condensed_summary_gives_its_children(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        rows = fetch(session.store.location, "SELECT id FROM summaries WHERE kind = 'condensed'")
        assert rows, "the fixture's 220 turns in a 32k window produce a condensed summary"
        row = rows[0]
        result = await session.expand(row[0], depth=1)
        assert result.summaries and not result.messages
        assert all(s.reached_at_depth == 1 for s in result.summaries)

    @pytest.mark.parametrize(
        "kwargs", [{"depth": 0}, {"depth": -1}, {"token_cap": 0}, {"token_cap": -5}, {"depth": "2"}]
    )
    async def test_bad_depth_and_caps_are_rejected(
        self, filled: tuple[MnesisSession, dict[str, str]], kwargs: dict[str, object]
    ) -> None:
        session, _ = filled
        items = await session.store.get_context_items(session.id, item_type="summary")
        with pytest.raises(InvalidArgumentError):
            await session.expand(items[0].item_id, **kwargs)  # type: ignore[arg-type]

    async def test_expanding_a_message_id_opens_the_leaf_that_covers_it(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, planted = filled
        message_id = planted[FACTS[0][0]]
        result = await session.expand(message_id)  # issue 33: a message ID is accepted
        assert result.message_id == message_id
        assert message_id in [m.id for m in result.messages]
        with pytest.raises(InvalidArgumentError):
            await session.expand("file_0123456789abcdef")


class TestAgentTools:
    def test_tool_definitions_exist_in_both_formats(self) -> None:
        from mnesis.retrieval.tools import anthropic_tools, openai_tools

        names = {t["function"]["name"] for t in openai_tools()}
        assert names == {"lcm_grep", "lcm_describe", "lcm_expand", "lcm_expand_query"}
        assert {t["name"] for t in anthropic_tools()} == names
        assert all("input_schema" in t for t in anthropic_tools())

    async def test_dispatcher_returns_errors_to_the_model_as_json(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        for name, args in [
            ("lcm_describe", {"id": "nope"}),
            ("lcm_grep", "{not json"),
            ("lcm_grep", {"query": "x", "bogus": 1}),
            ("lcm_unknown", {}),
        ]:
            payload = json.loads(await session.execute_tool(name, args))
            assert "error" in payload

    async def test_send_runs_lcm_tool_calls_until_the_model_answers(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM()
        session, planted = await _filled_session(db_path, pool, llm)
        llm.script(
            Respond(
                "", tool_calls=(ToolCall("t1", "lcm_grep", {"query": "which port for the API"}),)
            ),
            Respond("The API is on 8443."),
        )
        turn = await session.send(
            "What port?", tools=session.lcm_tool_definitions(), run_lcm_tools=True
        )
        assert turn.text == "The API is on 8443."
        messages = await session.conversation_messages()
        tool = messages[-2].tool_parts[0]
        assert tool.status.state == "completed"
        assert planted[FACTS[0][0]] in (tool.output or "")
        await session.close()

    async def test_expand_query_answers_from_a_bounded_sub_session(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM()
        session, planted = await _filled_session(db_path, pool, llm)
        covering = (await session.grep("port 8443")).matches[0].covering_summary_id
        assert covering is not None
        fact_id = planted[FACTS[0][0]]
        llm.script(
            Respond(
                "", tool_calls=(ToolCall("t1", "lcm_expand", {"summary_id": covering, "depth": 8}),)
            ),
            Respond(f"It moved to 8443 ({fact_id})."),
        )
        result = await session.expand_query("Which port did the API move to?", query="API port")
        assert "8443" in result.answer
        assert fact_id in result.cited_ids
        assert result.tool_calls == 1
        child = await MnesisSession.load(result.sub_session_id, db_path=db_path, pool=pool)
        child_messages = await child.conversation_messages()
        assert any(p.tool_name == "lcm_expand" for m in child_messages for p in m.tool_parts)
        await child.close()
        await session.close()

    async def test_sub_agent_cannot_reach_summaries_outside_its_grant(
        self, filled: tuple[MnesisSession, dict[str, str]]
    ) -> None:
        session, _ = filled
        items = await session.store.get_context_items(session.id, item_type="summary")
        assert len(items) >= 2, "the fixture compacts into several summaries in context"
        engine = RetrievalEngine(session.store, session.id, allowed_summary_ids=[items[0].item_id])
        await engine.expand(items[0].item_id)
        with pytest.raises(OutOfScopeError):
            await engine.expand(items[1].item_id)
        with pytest.raises(OutOfScopeError):
            await engine.grep("tests")


class TestRankingTiers:
    async def test_messages_with_every_word_come_first_and_pages_do_not_repeat(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        both = await session.record("the quokka sat near the lighthouse", "ok")
        for index in range(3):
            await session.record(f"a quokka story number {index} quokka quokka", "ok")
            await session.record(f"the lighthouse keeper's log {index}", "ok")
        first = await session.grep("quokka lighthouse", scope="messages", limit=1)
        assert [m.id for m in first.matches] == [both.user_message_id]
        assert first.matches[0].matched_terms == ["quokka", "lighthouse"]
        seen = [first.matches[0].id]
        own = 1
        cursor = first.next_cursor
        while cursor is not None:
            page = await session.grep("quokka lighthouse", scope="messages", limit=2, cursor=cursor)
            seen.extend(m.id for m in page.matches)
            own += sum(1 for m in page.matches if m.matched_terms)
            cursor = page.next_cursor
        # The seven turns that say the words, and the replies to them (by context).
        assert len(seen) == len(set(seen))
        assert own == 7
        await session.close()

    def test_a_single_word_has_one_tier_and_several_words_two(self) -> None:
        assert len(parse_query("quokka").tiers) == 1
        tiers = parse_query("quokka lighthouse").tiers
        both = (Term.word("quokka"), Term.word("lighthouse"))
        assert tiers[0] == SearchQuery(all_of=both)
        assert tiers[1] == SearchQuery(any_of=both, not_all_of=both)
        assert render_fts5(tiers[0]) == '"quokka" AND "lighthouse"'
        assert render_fts5(tiers[1]) == (
            '(("quokka" OR "lighthouse")) NOT ("quokka" AND "lighthouse")'
        )


class TestSessionFilterStrategies:
    @pytest.mark.parametrize("min_messages", [0, 10**9], ids=["in the index", "after the join"])
    async def test_both_ways_of_filtering_by_session_give_the_same_scoped_results(
        self, db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch, min_messages: int
    ) -> None:
        from mnesis.store.sqlite import search_sql

        monkeypatch.setattr(search_sql, "FTS_SESSION_TOKEN_MIN_MESSAGES", min_messages)
        mine = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        other = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
        kept = await mine.record("the pelican landed on the pier", "ok")
        for index in range(12):
            await other.record(f"another pelican sighting {index}", "ok")
        found = await mine.grep("pelican", scope="messages")
        assert [m.id for m in found.matches if m.matched_terms] == [kept.user_message_id]
        assert {m.session_id for m in found.matches} == {mine.id}
        both = await mine.grep("pelican", scope="messages", all_sessions=True, limit=50)
        assert {m.session_id for m in both.matches} == {mine.id, other.id}
        await mine.close()
        await other.close()
