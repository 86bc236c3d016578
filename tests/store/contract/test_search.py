"""The store contract: full-text search and newest-first scans of stored history."""

from __future__ import annotations

from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import TextPart, ToolPart
from mnesis.store import ImmutableStore
from mnesis.store.base import SearchFilter
from mnesis.store.search_query import SearchQuery, Term
from tests.store.contract.helpers import (
    append_text,
    make_commit,
    make_message,
    message_items,
    new_session,
)


def at(session_id: str, created_at: int) -> Message:
    return Message(id=new_id("msg"), session_id=session_id, role="user", created_at=created_at)


def words(*terms: str) -> SearchQuery:
    return SearchQuery(all_of=tuple(Term.word(t) for t in terms))


class TestFullTextSearch:
    async def test_every_word_must_match_and_only_conversation_messages_are_hits(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        hit = await append_text(store, sid, "the staging database moved to another host")
        await append_text(store, sid, "the staging server is fine")
        found = await store.search_text(
            query=words("staging", "database"),
            scope="messages",
            where=SearchFilter(session_ids=[sid]),
            limit=10,
        )
        assert [h.id for h in found] == [hit]
        assert found[0].kind == "message" and found[0].session_id == sid
        assert "staging database" in found[0].text

    async def test_conversation_text_ranks_above_tool_output(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        tool = await store.append_message(
            make_message(sid, "assistant"),
            [ToolPart(tool_name="grep", tool_call_id="c1", output="flamingo in the log")],
        )
        text = await append_text(store, sid, "we talked about the flamingo")
        found = await store.search_text(
            query=words("flamingo"), scope="messages", where=SearchFilter([sid]), limit=10
        )
        assert [h.id for h in found] == [text, tool.message_id]

    async def test_a_phrase_matches_consecutive_words_only(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        hit = await append_text(store, sid, "deploy the blue green release")
        await append_text(store, sid, "green and blue are colours")
        found = await store.search_text(
            query=SearchQuery(all_of=(Term.phrase("blue", "green"),)),
            scope="messages",
            where=SearchFilter([sid]),
            limit=10,
        )
        assert [h.id for h in found] == [hit]

    async def test_other_sessions_and_times_outside_the_range_are_left_out(
        self, store: ImmutableStore
    ) -> None:
        mine, other = await new_session(store), await new_session(store)
        early = await store.append_message(at(mine, 1_000), [TextPart(text="walrus early")])
        late = await store.append_message(at(mine, 5_000), [TextPart(text="walrus late")])
        await append_text(store, other, "walrus elsewhere")
        scoped = await store.search_text(
            query=words("walrus"), scope="messages", where=SearchFilter([mine]), limit=10
        )
        assert {h.id for h in scoped} == {early.message_id, late.message_id}
        ranged = await store.search_text(
            query=words("walrus"),
            scope="messages",
            where=SearchFilter([mine], since=2_000, until=9_000),
            limit=10,
        )
        assert [h.id for h in ranged] == [late.message_id]
        everywhere = await store.search_text(
            query=words("walrus"), scope="messages", where=SearchFilter(), limit=10
        )
        assert len(everywhere) == 3

    async def test_pages_do_not_overlap(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        for i in range(7):
            await append_text(store, sid, f"heron number {i}")
        where = SearchFilter([sid])
        first = await store.search_text(
            query=words("heron"), scope="messages", where=where, limit=4
        )
        rest = await store.search_text(
            query=words("heron"), scope="messages", where=where, limit=4, offset=4
        )
        assert len(first) == 4 and len(rest) == 3
        assert not {h.part_id for h in first} & {h.part_id for h in rest}

    async def test_summaries_are_searched_in_their_own_scope(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        for i in range(2):
            await append_text(store, sid, f"m{i}")
        commit = make_commit(sid, await message_items(store, sid), content="the capybara plan")
        await store.commit_compaction(commit)
        found = await store.search_text(
            query=words("capybara"), scope="summaries", where=SearchFilter([sid]), limit=5
        )
        assert [(h.kind, h.id) for h in found] == [("summary", commit.summary.id)]
        assert (
            await store.search_text(
                query=words("capybara"), scope="messages", where=SearchFilter([sid]), limit=5
            )
            == []
        )

    async def test_cjk_words_are_found_inside_longer_runs(self, store: ImmutableStore) -> None:
        sid = await new_session(store)
        hit = await append_text(store, sid, "我们讨论了記憶管理系统")
        found = await store.search_text(
            query=SearchQuery(all_of=(Term.phrase("記憶", "憶管", "管理"),)),
            scope="messages",
            where=SearchFilter([sid]),
            limit=5,
        )
        assert [h.id for h in found] == [hit]


class TestScans:
    async def test_texts_come_newest_first_in_pages_keyed_below_the_last(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"line {i}") for i in range(5)]
        where = SearchFilter([sid])
        first = await store.scan_text(scope="messages", where=where, before_key=None, limit=3)
        rest = await store.scan_text(
            scope="messages", where=where, before_key=first[-1].key, limit=3
        )
        assert [h.id for h in first + rest] == ids[::-1]
        assert [h.text for h in first] == ["line 4", "line 3", "line 2"]

    async def test_a_scan_keeps_to_its_sessions_and_scope(self, store: ImmutableStore) -> None:
        mine, other = await new_session(store), await new_session(store)
        await append_text(store, other, "not mine")
        for i in range(2):
            await append_text(store, mine, f"m{i}")
        commit = make_commit(mine, await message_items(store, mine), content="summary text")
        await store.commit_compaction(commit)
        messages = await store.scan_text(
            scope="messages", where=SearchFilter([mine]), before_key=None, limit=10
        )
        assert [h.text for h in messages] == ["m1", "m0"]  # the marker is not a hit
        summaries = await store.scan_text(
            scope="summaries", where=SearchFilter([mine]), before_key=None, limit=10
        )
        assert [(h.kind, h.id) for h in summaries] == [("summary", commit.summary.id)]

    async def test_a_scan_under_a_summary_sees_only_what_it_covers(
        self, store: ImmutableStore
    ) -> None:
        sid = await new_session(store)
        ids = [await append_text(store, sid, f"m{i}") for i in range(4)]
        commit = make_commit(sid, (await message_items(store, sid))[:2])
        await store.commit_compaction(commit)
        covered = await store.scan_text(
            scope="messages",
            where=SearchFilter([sid], under_summary=commit.summary.id),
            before_key=None,
            limit=10,
        )
        assert [h.id for h in covered] == ids[:2][::-1]
