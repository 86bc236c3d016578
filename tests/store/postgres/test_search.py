"""Full-text search and scans on PostgreSQL: the ``tsquery`` rendering, ranking, CJK,
filters and paging, through the store interface."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnesis.models.parts import TextPart, ToolPart
from mnesis.retrieval import parse_query
from mnesis.store.base import SearchFilter
from mnesis.store.postgres import PostgresStore
from mnesis.store.postgres.search import render_tsquery
from mnesis.store.search_query import SearchQuery, Term
from tests.store.contract.helpers import (
    T0,
    append_text,
    make_commit,
    make_message,
    message_items,
    new_session,
)

pytestmark = pytest.mark.postgres


def _q(*words: str) -> SearchQuery:
    return SearchQuery(all_of=tuple(Term.word(w) for w in words))


async def _ids(store: PostgresStore, query: SearchQuery, **where: object) -> list[str]:
    hits = await store.search_text(
        query=query,
        scope="messages",
        where=SearchFilter(**where),
        limit=50,  # type: ignore[arg-type]
    )
    return [h.id for h in hits]


class TestRendering:
    def test_tiers_render_as_and_or_and_not(self) -> None:
        tiers = parse_query("quokka lighthouse").tiers
        assert render_tsquery(tiers[0]) == "'quokka' & 'lighthouse'"
        assert render_tsquery(tiers[1]) == (
            "(('quokka' | 'lighthouse')) & !('quokka' & 'lighthouse')"
        )
        assert render_tsquery(SearchQuery(all_of=(Term.phrase("db", "staging"),))) == (
            "'db staging'"
        )

    @given(st.text(min_size=1, max_size=40))
    def test_any_user_text_renders_to_a_valid_tsquery(self, pg_dsn: str, text: str) -> None:
        with psycopg.connect(pg_dsn) as conn:
            for tier in parse_query(text).tiers if text.strip() and "\x00" not in text else []:
                conn.execute("SELECT to_tsquery('english', %s)", (render_tsquery(tier),))

    def test_quotes_and_backslashes_inside_words_stay_words(self, pg_dsn: str) -> None:
        query = SearchQuery(all_of=(Term.word("it's\\"), Term.word("a|b&!c")))
        with psycopg.connect(pg_dsn) as conn:
            conn.execute("SELECT to_tsquery('english', %s)", (render_tsquery(query),))


class TestFullText:
    async def test_phrases_match_words_in_order_only(self, pg_store: PostgresStore) -> None:
        sid = await new_session(pg_store)
        yes = await append_text(pg_store, sid, "the db staging host moved")
        await append_text(pg_store, sid, "staging the db later")
        phrase = SearchQuery(all_of=(Term.phrase("db", "staging"),))
        assert await _ids(pg_store, phrase) == [yes]

    async def test_stemming_matches_other_forms(self, pg_store: PostgresStore) -> None:
        sid = await new_session(pg_store)
        mid = await append_text(pg_store, sid, "we moved the servers")
        assert await _ids(pg_store, _q("move", "server")) == [mid]

    async def test_cjk_words_match_their_bigram_phrases(self, pg_store: PostgresStore) -> None:
        sid = await new_session(pg_store)
        mid = await append_text(pg_store, sid, "记忆管理系统将每条消息写入只追加的存储")
        await append_text(pg_store, sid, "存储只是 unrelated 追加")
        for text in ("只追加的存储", "记忆管理", "存储"):
            (tier, *_) = parse_query(text).tiers
            assert mid in await _ids(pg_store, tier), text
        (tier, *_) = parse_query("只追加的存储").tiers
        assert await _ids(pg_store, tier) == [mid]

    async def test_conversation_text_ranks_above_tool_output(self, pg_store: PostgresStore) -> None:
        sid = await new_session(pg_store)
        tool = await pg_store.append_message(
            make_message(sid, "assistant"),
            [ToolPart(tool_name="bash", tool_call_id="c1", output="wombat " * 3)],
        )
        said = await append_text(pg_store, sid, "a wombat dug here")
        hits = await pg_store.search_text(
            query=_q("wombat"), scope="messages", where=SearchFilter(), limit=10
        )
        assert [h.id for h in hits] == [said, tool.message_id]
        assert hits[0].rank < hits[1].rank < 0

    async def test_filters_scope_sessions_time_and_lineage(self, pg_store: PostgresStore) -> None:
        mine, other = await new_session(pg_store), await new_session(pg_store)
        early, late = make_message(mine), make_message(mine)
        early.created_at, late.created_at = T0 - 10, T0 + 10
        old = await pg_store.append_message(early, [TextPart(text="heron one")])
        new = await pg_store.append_message(late, [TextPart(text="heron two")])
        theirs = await append_text(pg_store, other, "heron three")
        heron = _q("heron")
        assert set(await _ids(pg_store, heron, session_ids=[mine])) == {
            old.message_id,
            new.message_id,
        }
        assert set(await _ids(pg_store, heron, session_ids=[mine, other])) == {
            old.message_id,
            new.message_id,
            theirs,
        }
        assert await _ids(pg_store, heron, session_ids=[]) == []
        assert await _ids(pg_store, heron, session_ids=[mine], since=T0) == [new.message_id]
        assert await _ids(pg_store, heron, session_ids=[mine], until=T0) == [old.message_id]
        items = await message_items(pg_store, mine)
        commit = make_commit(mine, items[:1])
        await pg_store.commit_compaction(commit)
        assert await _ids(pg_store, heron, under_summary=commit.summary.id) == [old.message_id]
        hits = await pg_store.search_text(
            query=heron,
            scope="summaries",
            where=SearchFilter(under_summary=commit.summary.id),
            limit=5,
        )
        assert hits == []

    async def test_pages_are_disjoint_and_complete(self, pg_store: PostgresStore) -> None:
        sid = await new_session(pg_store)
        expected = {await append_text(pg_store, sid, f"ibis {i} " * (i + 1)) for i in range(7)}
        seen: list[str] = []
        for offset in range(0, 8, 3):
            hits = await pg_store.search_text(
                query=_q("ibis"), scope="messages", where=SearchFilter(), limit=3, offset=offset
            )
            seen += [h.id for h in hits]
        assert len(seen) == len(set(seen)) == 7 and set(seen) == expected

    async def test_summaries_are_ranked_on_the_same_scale(self, pg_store: PostgresStore) -> None:
        sid = await new_session(pg_store)
        await append_text(pg_store, sid, "an egret flew")
        commit = make_commit(sid, await message_items(pg_store, sid), content="egret summary")
        await pg_store.commit_compaction(commit)
        (hit,) = await pg_store.search_text(
            query=_q("egret"), scope="summaries", where=SearchFilter(session_ids=[sid]), limit=5
        )
        assert (hit.kind, hit.id, hit.text) == ("summary", commit.summary.id, "egret summary")
        assert hit.rank < 0


class TestScan:
    async def test_scans_go_newest_first_and_continue_below_a_key(
        self, pg_store: PostgresStore
    ) -> None:
        sid = await new_session(pg_store)
        mids = [await append_text(pg_store, sid, f"line {i}") for i in range(5)]
        where = SearchFilter(session_ids=[sid])
        first = await pg_store.scan_text(scope="messages", where=where, before_key=None, limit=2)
        assert [h.id for h in first] == mids[:-3:-1]
        rest = await pg_store.scan_text(
            scope="messages", where=where, before_key=first[-1].key, limit=10
        )
        assert [h.id for h in rest] == mids[2::-1]
        assert all(a.key > b.key for a, b in zip(first + rest, (first + rest)[1:], strict=False))

    async def test_scans_return_text_with_nul_bytes_intact(self, pg_store: PostgresStore) -> None:
        sid = await new_session(pg_store)
        commit_text = "summary \x00 with nul"
        await append_text(pg_store, sid, "x")
        commit = make_commit(sid, await message_items(pg_store, sid), content=commit_text)
        await pg_store.commit_compaction(commit)
        (hit,) = await pg_store.scan_text(
            scope="summaries", where=SearchFilter(), before_key=None, limit=5
        )
        assert hit.text == commit_text


async def test_grouped_searches_run_without_jit_compilation(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``relevance`` or ``newest_first`` search runs with JIT off (on the server's
    default, a common word over a million rows is compiled at length first)."""
    from mnesis.store.postgres import search

    sid = await new_session(pg_store)
    await append_text(pg_store, sid, "the port of the api")
    seen: list[str] = []

    def showing(function: Any) -> Any:
        async def shown(conn: Any, *args: Any) -> Any:
            row = await (await conn.execute("SHOW jit")).fetchone()
            seen.append(row[0])
            return await function(conn, *args)

        return shown

    for name in ("relevance_keys", "newest_group_keys"):
        monkeypatch.setattr(search, name, showing(getattr(search, name)))
    queries = (
        SearchQuery(any_of=(Term.word("port"), Term.word("api")), relevance=True, group_limit=2),
        SearchQuery(all_of=(Term.word("port"),), newest_first=True, group_limit=2),
    )
    for query in queries:
        hits = await pg_store.search_text(
            query=query, scope="messages", where=SearchFilter(), limit=5
        )
        assert [h.session_id for h in hits] == [sid]
    assert seen == ["off", "off"]

    async def setting(conn: Any) -> Any:
        return await (await conn.execute("SHOW jit")).fetchone()

    # Only the search's transaction: its connection keeps the server's setting.
    assert await pg_store.db.read(setting) == ("on",)
