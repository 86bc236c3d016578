"""``grep`` asks its store a bounded number of times, however many sessions its hits
come from: the candidate searches, one read of the newest turns, the replies of
question turns, and one read of where the page's hits stand."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import pytest

from mnesis import MnesisSession, StorePool
from mnesis.retrieval import RetrievalEngine
from mnesis.retrieval.results import GrepResult
from tests.retrieval.helpers import counting_store, new_session

_MOST_CALLS = 5
"""Two candidate searches (messages, summaries), newest turns, replies, places."""


_TEAMS = (
    "alpha bravo charlie delta",
    "echo foxtrot golf hotel",
    "india juliet kilo lima",
    "mike november oscar papa",
    "quebec romeo sierra tango",
    "uniform victor whiskey xray",
)


@pytest.fixture
async def sessions(db_path: str, pool: StorePool) -> AsyncIterator[list[MnesisSession]]:
    """Six sessions whose turns all hold the query's words, each in its own words."""
    opened = [await new_session(db_path, pool) for _ in _TEAMS]
    for team, session in zip(_TEAMS, opened, strict=True):
        for turn in range(3):
            await session.record(
                f"which billing retry limit did {team} pick in round {turn}?",
                f"{team} set the billing retry limit to {turn + 3}",
            )
    yield opened
    for session in opened:
        await session.close()


async def _counted_grep(
    session: MnesisSession, **options: object
) -> tuple[GrepResult, Counter[str]]:
    store, calls = counting_store(session.store.backend)
    engine = RetrievalEngine(store, session.id)
    result = await engine.grep("billing retry limit", limit=20, **options)  # type: ignore[arg-type]
    return result, calls


class TestRoundTrips:
    async def test_grep_over_many_sessions_asks_no_more_than_over_one(
        self, sessions: list[MnesisSession]
    ) -> None:
        one, calls_one = await _counted_grep(sessions[0])
        assert {m.session_id for m in one.matches} == {sessions[0].id}
        many, calls_many = await _counted_grep(sessions[0], all_sessions=True)
        assert len({m.session_id for m in many.matches}) == len(sessions)
        assert sum(calls_many.values()) <= _MOST_CALLS
        assert calls_many == calls_one
        assert calls_many["context_places"] == 1
        assert calls_many["recent_turns"] == 1

    async def test_the_counted_grep_finds_what_the_sessions_grep_finds(
        self, sessions: list[MnesisSession]
    ) -> None:
        counted, _ = await _counted_grep(sessions[1], all_sessions=True)
        plain = await sessions[1].retrieval.grep("billing retry limit", limit=20, all_sessions=True)
        assert counted.model_dump() == plain.model_dump()
        assert all(m.in_context for m in plain.matches)

    async def test_a_regex_grep_reads_the_newest_turns_and_the_places_once(
        self, sessions: list[MnesisSession]
    ) -> None:
        store, calls = counting_store(sessions[0].store.backend)
        engine = RetrievalEngine(store, sessions[0].id)
        result = await engine.grep("retry limit to [0-9]", mode="regex", all_sessions=True)
        assert len({m.session_id for m in result.matches}) == len(sessions)
        assert calls["recent_turns"] == 1
        assert calls["context_places"] == 1
