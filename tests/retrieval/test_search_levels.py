"""The candidate search behind ``grep``: newest matches per term combination, graded
coordination levels walked in one call, own-text and oldest matches of a crowded
combination; the same on both backends."""

from __future__ import annotations

import pytest

from mnesis import StorePool
from mnesis.errors import InvalidArgumentError
from mnesis.store.base import SearchFilter
from mnesis.store.search_query import MAX_GROUPS, GroupMatches, SearchQuery, Term
from tests.retrieval.helpers import levels_query, new_session


def _words(*words: str) -> tuple[Term, ...]:
    return tuple(Term.word(w) for w in words)


class TestSearchQueryPlan:
    def test_group_limit_needs_newest_first_and_descending_needs_group_limit(self) -> None:
        with pytest.raises(InvalidArgumentError):
            SearchQuery(any_of=_words("a"), group_limit=5)
        with pytest.raises(InvalidArgumentError):
            SearchQuery(any_of=_words("a"), newest_first=True, group_limit=0)
        with pytest.raises(InvalidArgumentError):
            SearchQuery(any_of=_words("a"), newest_first=True, descending=True)

    def test_levels_go_from_every_term_down_skipping_levels_with_too_many_groups(self) -> None:
        five = [q.at_least for q in levels_query("a", "b", "c", "d", "e").levels()]
        assert five == [5, 4, 3, 2, 1]
        six = [q.at_least for q in levels_query("a", "b", "c", "d", "e", "f").levels()]
        assert six == [6, 5, 1]
        assert all(
            len(level) <= MAX_GROUPS
            for level in levels_query("a", "b", "c", "d", "e", "f").planned_groups()[1:-1]
        )
        assert [q.at_least for q in levels_query("a", "b", "c", at_least=2).levels()] == [3, 2]

    def test_each_group_requires_all_of_its_terms(self) -> None:
        level = SearchQuery(
            all_of=_words("must"), any_of=_words("a", "b", "c"), at_least=2, newest_first=True
        )
        groups = [tuple(t.alternatives[0][0] for t in g.all_of) for g in level.per_group()]
        assert groups == [("must", "a", "b"), ("must", "a", "c"), ("must", "b", "c")]

    def test_speaker_and_date_words_may_match_the_context_not_the_own_text(self) -> None:
        own, speaker_date = SearchQuery(all_of=_words("monday", "ledger", "user")).own_text_terms()
        assert [t.alternatives[0][0] for t in own] == ["ledger"]
        assert [t.alternatives[0][0] for t in speaker_date] == ["monday", "user"]

    def test_group_matches_come_level_by_level_own_text_first_groups_taking_turns(self) -> None:
        found = GroupMatches()
        found.add_group([1, 2], [], [])
        assert found.end_level() == 2
        found.add_group([10, 11, 12], [20], [13])
        found.add_group([30, 31], [40, 41], [])
        assert found.end_level() == 11
        assert found.keys() == [1, 2, 20, 40, 41, 10, 30, 11, 31, 12, 13]


class TestCandidateSearch:
    async def test_a_rare_term_is_not_crowded_out_by_a_common_one(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await new_session(db_path, pool)
        rare = await session.record("the load balancer listens on port 8443 now", "ok")
        for index in range(30):
            await session.record(f"gateway health check {index} passed", "fine")
        hits = await session.store.search_text(
            query=levels_query("gateway", "8443", context=False),
            scope="messages",
            where=SearchFilter(session_ids=[session.id]),
            limit=8,
        )
        # Each term brings its own newest matches (the groups take turns).
        assert rare.user_message_id in [h.id for h in hits[:3]]
        await session.close()

    async def test_a_crowded_combination_gives_its_own_text_and_oldest_matches(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await new_session(db_path, pool)
        first = await session.record("ops: keep the billing retry limit at 7", "noted")
        for index in range(12):
            await session.record(f"billing retry limit question {index}?", "no idea")
        said = await session.record("ops: the billing retry limit stays 7", "ok")
        for index in range(12):
            # Replies whose context (the previous turn) holds the words.
            await session.record("anything else?", f"nothing {index}")
        hits = await session.store.search_text(
            query=levels_query("billing", "retry", "limit"),
            scope="messages",
            where=SearchFilter(session_ids=[session.id]),
            limit=40,
        )
        ids = [h.id for h in hits]
        assert said.user_message_id in ids[:5]
        assert first.user_message_id in ids
        await session.close()

    async def test_a_time_range_applies_to_every_match_not_only_the_newest(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await new_session(db_path, pool)
        old = await session.record("the cache eviction policy is LRU", "ok")
        for index in range(20):
            await session.record(f"cache eviction policy talk {index}", "sure")
        messages = await session.store.get_messages(session.id, include_summaries=False)
        until = next(m.message.created_at for m in messages if m.message.id == old.user_message_id)
        hits = await session.store.search_text(
            query=levels_query("cache", "eviction", "policy"),
            scope="messages",
            where=SearchFilter(session_ids=[session.id], until=until + 1),
            limit=5,
        )
        assert old.user_message_id in [h.id for h in hits]
        await session.close()
