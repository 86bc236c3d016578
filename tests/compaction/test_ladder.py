"""The escalation ladder, the circuit breaker, and a user's own summariser in a real session."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mnesis import MessageWithParts, MnesisSession, StorePool, TokenEstimator
from mnesis.compaction import Summariser
from mnesis.compaction.breaker import CircuitBreaker
from mnesis.compaction.candidates import CondensedCandidate, SummaryCandidate, SummaryTarget
from mnesis.compaction.ladder import climb, default_ladder
from mnesis.compaction.summariser import (
    CallableSummariser,
    ExtractiveSummariser,
    ModelSummariser,
)
from mnesis.config import CompactionConfig
from mnesis.context.builder import ContextBudget
from mnesis.store.base import SummaryRecord
from tests.compaction import lineage_report, seed_session, small_window_config
from tests.compaction.test_levels import Scripted, leaf_summaries, span

ESTIMATOR = TokenEstimator()
TARGET = SummaryTarget(600, 40, ESTIMATOR, usable=26_000)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class Rung:
    """A scripted rung: answers ``None`` (escalate) or a candidate, and counts its calls."""

    def __init__(self, level: int, answer: bool, *, uses_model: bool = True) -> None:
        self.level = level
        self.uses_model = uses_model
        self.input_window = 100_000
        self.answer = answer
        self.calls = 0

    async def summarise(
        self, messages: Sequence[MessageWithParts], target: SummaryTarget
    ) -> SummaryCandidate | None:
        self.calls += 1
        if not self.answer:
            return None
        return SummaryCandidate(f"level {self.level}", 2, "m0", "m1", self.level, len(messages))

    async def condense(
        self, summaries: Sequence[SummaryRecord], target: SummaryTarget
    ) -> CondensedCandidate | None:
        self.calls += 1
        return CondensedCandidate(f"level {self.level}", 2, self.level, []) if self.answer else None


async def _climb(ladder: list[Rung], breaker: CircuitBreaker) -> int | None:
    messages = span("bugfix_sprint", 2)
    rungs: list[Summariser] = list(ladder)
    candidate = await climb(rungs, lambda rung: rung.summarise(messages, TARGET), breaker)
    return None if candidate is None else candidate.compaction_level


class TestClimb:
    async def test_the_first_rung_that_answers_wins_and_later_rungs_are_not_called(self) -> None:
        ladder = [Rung(1, False), Rung(2, True), Rung(3, True, uses_model=False)]
        assert await _climb(ladder, CircuitBreaker(3, 60)) == 2
        assert [r.calls for r in ladder] == [1, 1, 0]

    async def test_every_rung_escalating_gives_none(self) -> None:
        assert await _climb([Rung(1, False), Rung(2, False)], CircuitBreaker(3, 60)) is None

    async def test_one_failed_climb_is_one_failure_and_an_open_breaker_skips_model_rungs(
        self,
    ) -> None:
        clock = Clock()
        breaker = CircuitBreaker(2, 300, clock=clock)
        ladder = [Rung(1, False), Rung(2, False), Rung(3, True, uses_model=False)]
        assert await _climb(ladder, breaker) == 3
        assert breaker.available()  # two model rungs failed, but in one climb
        assert await _climb(ladder, breaker) == 3
        assert not breaker.available()
        assert await _climb(ladder, breaker) == 3
        assert [r.calls for r in ladder] == [2, 2, 3]
        clock.now += 300
        assert breaker.available()
        assert await _climb(ladder, breaker) == 3
        assert [r.calls for r in ladder] == [3, 3, 4]

    async def test_a_model_success_resets_the_failure_count(self) -> None:
        breaker = CircuitBreaker(2, 300, clock=Clock())
        failing = [Rung(1, False), Rung(3, True, uses_model=False)]
        await _climb(failing, breaker)
        await _climb([Rung(1, True)], breaker)
        await _climb(failing, breaker)
        assert breaker.available()

    async def test_a_ladder_without_model_rungs_never_touches_the_breaker(self) -> None:
        breaker = CircuitBreaker(1, 300, clock=Clock())
        assert await _climb([Rung(1, False, uses_model=False)], breaker) is None
        assert breaker.available()


class TestDefaultLadder:
    def test_a_model_gets_level_1_level_2_and_level_3(self) -> None:
        ladder = default_ladder("fake/model", CompactionConfig(), Scripted("x"))
        assert [(r.level, r.uses_model) for r in ladder] == [(1, True), (2, True), (3, False)]
        assert isinstance(ladder[0], ModelSummariser)

    def test_level_2_can_be_switched_off(self) -> None:
        ladder = default_ladder("fake/model", CompactionConfig(level2_enabled=False), Scripted(""))
        assert [r.level for r in ladder] == [1, 3]

    def test_the_extractive_model_is_the_extractive_summariser_at_level_1(self) -> None:
        (rung,) = default_ladder("extractive", CompactionConfig(), Scripted("x"))
        assert rung == ExtractiveSummariser(level=1)
        assert not rung.uses_model

    async def test_configured_prompts_reach_the_model(self) -> None:
        config = CompactionConfig(compaction_prompt="LEAF {target_tokens}", condense_prompt="C1")
        llm = Scripted("")
        ladder = default_ladder("fake/model", config, llm)
        await ladder[0].summarise(span("bugfix_sprint", 3), TARGET)
        await ladder[0].condense(leaf_summaries(2), TARGET)
        systems = [messages[0]["content"] for _, messages, _ in llm.requests]
        assert systems[0].startswith("LEAF ") and systems[0] != "LEAF {target_tokens}"
        assert systems[1] == "C1"


class TestCallableSummariser:
    async def test_the_answer_gets_the_footer_and_the_rung_level(self) -> None:
        seen: list[tuple[str, int]] = []

        async def mine(text: str, target_tokens: int) -> str:
            seen.append((text, target_tokens))
            return "GOAL: keep the port at 8443. Files: src/app/server.py"

        messages = span("artifact_flood", 6)
        candidate = await CallableSummariser(mine, level=2).summarise(messages, TARGET)
        assert candidate is not None
        assert candidate.compaction_level == 2
        assert candidate.text.startswith("GOAL: keep the port at 8443.")
        assert candidate.file_ids and candidate.text.endswith("]")
        assert "[LCM File IDs: " in candidate.text
        ((text, target_tokens),) = seen
        assert messages[0].id in text and 0 < target_tokens < 600

    @pytest.mark.parametrize("answer", ["", "\x00\x01 ???? ####", "too long " * 2_000])
    async def test_a_bad_answer_escalates(self, answer: str) -> None:
        async def mine(text: str, target_tokens: int) -> str:
            return answer

        summariser = CallableSummariser(mine)
        assert await summariser.summarise(span("bugfix_sprint", 6), TARGET) is None
        assert await summariser.condense(leaf_summaries(3), TARGET) is None

    async def test_a_raising_callable_escalates(self) -> None:
        async def mine(text: str, target_tokens: int) -> str:
            raise RuntimeError("my summariser is down")

        assert await CallableSummariser(mine).summarise(span("bugfix_sprint", 6), TARGET) is None


class TestUserLadderInTheEngine:
    async def test_a_session_compacts_with_the_users_summariser(
        self, db_path: str, pool: StorePool
    ) -> None:
        session_id, seeded = await seed_session(db_path, pool, "bugfix_sprint", 40)
        session = await MnesisSession.load(
            session_id, config=small_window_config(), db_path=db_path, pool=pool
        )
        calls: list[int] = []

        async def mine(text: str, target_tokens: int) -> str:
            calls.append(target_tokens)
            return f"BYO summary number {len(calls)}: the work goes on."

        session.compaction_engine.summarisers = [CallableSummariser(mine, level=1)]
        result = await session.compact()

        assert result.error is None and result.level_used == 1
        assert calls and session.compaction_engine.model_calls == 0
        budget = ContextBudget.compute(session.model_info, session.config)
        assert result.tokens_after <= budget.usable
        report = await lineage_report(session.store, db_path, session.id)
        assert report.problems == []
        assert report.expanded_ids == seeded.message_ids
        assert {s.level for s in report.summaries} == {1}
        assert all("BYO summary number" in s.content for s in report.summaries)
        await session.close()
