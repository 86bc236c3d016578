"""Compaction end to end on long generated sessions, and the soft/hard thresholds.

Every session is replayed through ``session.record()`` into a real SQLite file
with automatic compaction on (a 32k window: 26,000 usable tokens), then
compacted once more with ``session.compact()``. Only the model is faked: either
the offline extractive summariser (``compaction_model="extractive"``) or the
session's :class:`FakeLLM` (its default deterministic reply).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from mnesis import (
    CompactionResult,
    MessageWithParts,
    MnesisEvent,
    MnesisSession,
    StorePool,
    TextPart,
    TokenEstimator,
    ToolPart,
)
from mnesis.context.builder import BuiltContext, ContextBudget
from mnesis.llm import Empty, Fail, FakeLLM, Garbage, Hang, LLMChunk, LLMRequest, Respond
from mnesis.testing import (
    SESSIONS,
    Conversation,
    ReplayResult,
    generate,
    message_tokens,
    replay,
)
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS
from tests.backends import fetch
from tests.compaction import (
    LineageReport,
    lineage_report,
    run_in_fresh_loop,
    seed_session,
    small_window_config,
)

ESTIMATOR = TokenEstimator()
FIXTURES = ("bugfix_sprint", "webapp_auth", "infra_migration", "artifact_flood")
MODELS = ("extractive", "fake")


@dataclass
class Outcome:
    """A fixture replayed with auto compaction, then compacted once more."""

    fixture: str
    model: str
    conversation: Conversation
    replayed: ReplayResult
    final: CompactionResult
    built: BuiltContext
    report: LineageReport
    stored: list[MessageWithParts]
    stored_count: int
    completed_during_replay: int
    leaf_target: int
    condensed_target: int
    model_calls: int

    @property
    def reduction(self) -> float:
        return 1 - self.built.token_estimate / self.replayed.history_tokens


def _compact_fixture(fixture: str, model: str, db_path: str) -> Outcome:
    async def run() -> Outcome:
        pool = StorePool()
        config = small_window_config(compaction_model=None if model == "fake" else model)
        try:
            session = await MnesisSession.create(
                model="fake/model", db_path=db_path, pool=pool, llm=FakeLLM(), config=config
            )
            events: list[tuple[MnesisEvent, dict[str, Any]]] = []
            session.subscribe(None, lambda event, payload: events.append((event, payload)))
            conversation = generate(SESSIONS[fixture])
            replayed = await replay(session, conversation)
            await session.compaction_engine.wait_for_pending()
            completed = sum(1 for e, _ in events if e is MnesisEvent.COMPACTION_COMPLETED)
            final = await session.compact()
            built = await session.build_context()
            report = await lineage_report(session.store, db_path, session.id)
            stored = await session.conversation_messages()
            calls = session.compaction_engine.model_calls
            await session.close()
        finally:
            await pool.close_all()
        ((count,),) = fetch(
            db_path,
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND NOT is_summary",
            session.id,
        )
        return Outcome(
            fixture=fixture,
            model=model,
            conversation=conversation,
            replayed=replayed,
            final=final,
            built=built,
            report=report,
            stored=stored,
            stored_count=count,
            completed_during_replay=completed,
            leaf_target=config.compaction.leaf_target_tokens,
            condensed_target=config.compaction.condensed_target_tokens,
            model_calls=calls,
        )

    return run_in_fresh_loop(run)


_OUTCOMES: dict[tuple[str, str], Outcome] = {}


def _outcome_for(fixture: str, model: str, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """Each (fixture, model) pair is replayed once per test run and shared."""
    key = (fixture, model)
    if key not in _OUTCOMES:
        path = tmp_path_factory.mktemp(f"{fixture}-{model}") / "mnesis.db"
        _OUTCOMES[key] = _compact_fixture(fixture, model, str(path))
    return _OUTCOMES[key]


@pytest.fixture(
    scope="module", params=[(f, m) for f in FIXTURES for m in MODELS], ids=lambda p: "-".join(p)
)
def outcome(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return _outcome_for(*request.param, tmp_path_factory)


def _independent_token_count(built: BuiltContext) -> int:
    """Re-count what the builder emitted, message by message."""
    estimator = TokenEstimator()
    total = estimator.estimate(built.system_prompt) + MESSAGE_OVERHEAD_TOKENS
    for message in built.messages:
        assert isinstance(message.content, str)
        total += estimator.estimate(message.content) + MESSAGE_OVERHEAD_TOKENS
    return total


def _comparable(parts: Any) -> list[dict[str, Any]]:
    """Parts without store-assigned IDs and without the tombstone timestamp."""
    out = []
    for part in parts:
        data = part.model_dump(exclude={"id"})
        if "status" in data:
            data["status"].pop("compacted_at", None)
        out.append(data)
    return out


class TestCompactionOfLongSessions:
    def test_the_assembled_context_fits_the_usable_budget(self, outcome: Outcome) -> None:
        built = outcome.built
        assert outcome.final.error is None
        assert built.token_estimate <= built.budget.usable
        assert _independent_token_count(built) <= built.budget.usable

    def test_the_context_is_at_least_30_percent_smaller_than_the_history(
        self, outcome: Outcome
    ) -> None:
        print(
            f"\n{outcome.fixture}/{outcome.model}: {len(outcome.replayed.message_ids)} messages, "
            f"history {outcome.replayed.history_tokens} tokens -> context "
            f"{outcome.built.token_estimate} tokens ({outcome.reduction:.1%} smaller), "
            f"{outcome.completed_during_replay} compactions during the replay, "
            f"{len(outcome.report.summaries)} summaries, {outcome.model_calls} model calls"
        )
        assert outcome.built.token_estimate <= 0.7 * outcome.replayed.history_tokens

    def test_every_summary_links_to_at_least_one_source(self, outcome: Outcome) -> None:
        summaries = outcome.report.summaries
        assert summaries, "the replay never compacted"
        for s in summaries:
            if s.kind == "leaf":
                assert s.message_ids and not s.parent_ids, s.id
            else:
                assert s.parent_ids and not s.message_ids, s.id

    def test_every_message_is_reachable_from_the_context_exactly_once_in_order(
        self, outcome: Outcome
    ) -> None:
        assert outcome.report.problems == []
        assert outcome.report.expanded_ids == outcome.replayed.message_ids

    def test_no_message_is_both_raw_and_summarised_in_the_context(self, outcome: Outcome) -> None:
        summarised = {mid for ids in outcome.report.sources.values() for mid in ids}
        assert not summarised & outcome.report.raw_ids
        assert outcome.report.sources, "no summary in the final context"

    def test_context_positions_are_unique_and_increasing(self, outcome: Outcome) -> None:
        positions = [i.position for i in outcome.report.items]
        assert positions == sorted(set(positions))

    def test_no_message_is_lost_or_rewritten(self, outcome: Outcome) -> None:
        assert outcome.stored_count == len(outcome.replayed.message_ids)
        assert [m.id for m in outcome.stored] == outcome.replayed.message_ids
        for message in outcome.stored:
            expected = outcome.replayed.parts_by_message[message.id]
            assert _comparable(message.parts) == _comparable(expected), message.id

    def test_planted_facts_stay_verbatim_and_reachable_through_lineage(
        self, outcome: Outcome
    ) -> None:
        assert len(outcome.replayed.facts) == len(outcome.conversation.facts)
        stored = {m.id: m for m in outcome.stored}
        for location in outcome.replayed.facts:
            assert location.fact.needle in stored[location.message_id].text
            assert outcome.report.holder_of(location.message_id) is not None, location.fact.key

    def test_compaction_ran_during_the_replay_but_not_on_every_turn(self, outcome: Outcome) -> None:
        turns = outcome.conversation.spec.turns
        assert 1 <= outcome.completed_during_replay <= turns // 10

    def test_every_summary_stays_within_twice_its_target(self, outcome: Outcome) -> None:
        for s in outcome.report.summaries:
            target = outcome.leaf_target if s.kind == "leaf" else outcome.condensed_target
            assert s.token_count <= 2 * target, (s.id, s.kind, s.level, s.token_count)


@pytest.fixture(scope="module", params=MODELS)
def flood(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return _outcome_for("artifact_flood", request.param, tmp_path_factory)


class TestThousandsOfFileIds:
    """``artifact_flood``: each turn's tool output lists ten fresh file IDs."""

    def test_the_session_mentions_thousands_of_distinct_file_ids(self, flood: Outcome) -> None:
        assert len(flood.conversation.file_ids) >= 4_000

    def test_summary_footers_stay_bounded(self, flood: Outcome) -> None:
        for s in flood.report.summaries:
            target = flood.leaf_target if s.kind == "leaf" else flood.condensed_target
            assert s.token_count <= 2 * target, (s.id, s.token_count)
            assert "[LCM File IDs: " in s.content, s.id
            footer = s.content[s.content.rindex("[LCM File IDs: ") :]
            assert footer.count("file_") <= 40, s.id

    def test_the_session_does_not_compact_on_every_turn(self, flood: Outcome) -> None:
        turns = flood.conversation.spec.turns
        assert 1 <= flood.completed_during_replay <= turns // 20

    def test_leaf_file_ids_column_keeps_every_id_of_its_span(self, flood: Outcome) -> None:
        by_message = flood.replayed.file_ids_by_message
        leaves = [s for s in flood.report.summaries if s.kind == "leaf"]
        assert leaves
        for leaf in leaves:
            expected = {fid for mid in leaf.message_ids for fid in by_message[mid]}
            assert expected, leaf.id
            assert expected <= set(leaf.file_ids), (leaf.id, len(expected - set(leaf.file_ids)))

    def test_condensed_file_ids_keep_their_childrens_ids(self, flood: Outcome) -> None:
        rows = {s.id: s for s in flood.report.summaries}
        for s in rows.values():
            if s.kind == "condensed":
                children = {fid for p in s.parent_ids for fid in rows[p].file_ids}
                assert children <= set(s.file_ids), s.id

    def test_every_file_id_stays_reachable_from_the_context(self, flood: Outcome) -> None:
        rows = {s.id: s for s in flood.report.summaries}
        reachable: set[str] = set()
        for item in flood.report.items:
            if item.item_type == "summary":
                reachable.update(rows[item.item_id].file_ids)
            else:
                reachable.update(flood.replayed.file_ids_by_message[item.item_id])
        assert flood.conversation.file_ids <= reachable


class TestThreeThousandMessageSession:
    async def test_marathon_compacts_within_budget_and_keeps_lineage_whole(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await MnesisSession.create(
            model="fake/model",
            db_path=db_path,
            pool=pool,
            llm=FakeLLM(),
            config=small_window_config(compaction_model="extractive"),
        )
        conversation = generate(SESSIONS["marathon"])
        replayed = await replay(session, conversation)
        await session.compact()
        built = await session.build_context()
        report = await lineage_report(session.store, db_path, session.id)
        await session.close()

        assert len(replayed.message_ids) == 3_000
        reduction = 1 - built.token_estimate / replayed.history_tokens
        print(
            f"\nmarathon/extractive: history {replayed.history_tokens} tokens -> context "
            f"{built.token_estimate} ({reduction:.1%} smaller), {len(report.summaries)} summaries"
        )
        assert built.token_estimate <= built.budget.usable
        assert reduction >= 0.3
        assert report.problems == []
        assert report.expanded_ids == replayed.message_ids
        for location in replayed.facts:
            assert report.holder_of(location.message_id) is not None


# -- model failures ----------------------------------------------------------------------

FAILURES: dict[str, Any] = {
    "fail": lambda: Fail("provider returned 529 overloaded"),
    "hang": lambda: Hang(),
    "empty": lambda: Empty(),
    "garbage": lambda: Garbage(),
    "longer_than_input": lambda: Respond("the build failed again, retrying the build; " * 8_000),
}


class TestCompactionSurvivesModelFailures:
    @pytest.mark.parametrize("failure", list(FAILURES))
    async def test_run_compaction_falls_back_to_level3_and_the_context_fits(
        self, failure: str, db_path: str, pool: StorePool
    ) -> None:
        session_id, seeded = await seed_session(db_path, pool, "bugfix_sprint", 40)
        llm = FakeLLM(chunk_chars=1_000_000).always(FAILURES[failure]())
        config = small_window_config(model_timeout_seconds=0.2, prune=False)
        session = await MnesisSession.load(
            session_id, config=config, db_path=db_path, pool=pool, llm=llm
        )
        budget = ContextBudget.compute(session.model_info, session.config)
        assert session.context_tokens > budget.usable
        events: list[tuple[Any, dict[str, Any]]] = []
        session.subscribe(None, lambda event, payload: events.append((event, payload)))

        result = await session.compaction_engine.run_compaction(session.id)

        assert result.error is None
        assert result.level_used == 3
        assert result.tokens_after <= budget.usable
        assert MnesisEvent.COMPACTION_COMPLETED in _names(events)
        assert MnesisEvent.COMPACTION_FAILED not in _names(events)
        built = await session.build_context()
        assert built.token_estimate <= budget.usable
        assert 0 < session.compaction_engine.model_calls == len(llm.calls)
        report = await lineage_report(session.store, db_path, session.id)
        assert report.problems == []
        assert report.expanded_ids == seeded.message_ids
        assert report.summaries and {s.level for s in report.summaries} == {3}
        for s in report.summaries:
            assert "\x00" not in s.content and "retrying the build; the build" not in s.content
        await session.close()

    async def test_a_model_that_keeps_failing_is_called_a_bounded_number_of_times(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM().always(Fail("provider down"), times=100_000)
        config = small_window_config(max_consecutive_model_failures=2)
        session = await MnesisSession.create(
            model="fake/model", db_path=db_path, pool=pool, llm=llm, config=config
        )
        completed: list[dict[str, Any]] = []
        session.subscribe(MnesisEvent.COMPACTION_COMPLETED, lambda e, p: completed.append(p))
        replayed = await replay(session, generate(SESSIONS["bugfix_sprint"]))
        await session.compact()

        calls = session.compaction_engine.model_calls
        print(f"\n{len(completed)} compactions, {calls} model calls with the model down")
        assert len(completed) >= 5
        # Two levels per attempt, then a cooldown (default 300 s) of Level 3 only.
        assert calls == len(llm.calls) <= 2 * config.compaction.max_consecutive_model_failures
        built = await session.build_context()
        assert built.token_estimate <= built.budget.usable
        report = await lineage_report(session.store, db_path, session.id)
        assert report.problems == []
        assert report.expanded_ids == replayed.message_ids
        await session.close()


# -- thresholds -------------------------------------------------------------------------


class GatedLLM:
    """A :class:`FakeLLM` whose compaction calls wait until ``gate`` is set.

    Deterministic stand-in for a slow compaction model: nothing finishes until
    the test says so, however fast or slow the machine is.
    """

    def __init__(self) -> None:
        self.fake = FakeLLM(delay_seconds=0.001)
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()
        """Set once a compaction call is waiting at the gate."""

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        if request.purpose == "compaction":
            self.entered.set()
            await self.gate.wait()
        async for chunk in self.fake.stream(request):
            yield chunk


def _names(events: list[tuple[Any, dict[str, Any]]]) -> list[Any]:
    return [e for e, _ in events]


async def _gated_session(
    db_path: str, pool: StorePool
) -> tuple[MnesisSession, GatedLLM, list[tuple[Any, dict[str, Any]]]]:
    """A small-window session on a :class:`GatedLLM`, and the list its events go to.

    Pruning is off: at this window it alone can drain the context, and these tests need
    a compaction that waits for the (gated) model."""
    llm = GatedLLM()
    session = await MnesisSession.create(
        model="fake/model",
        db_path=db_path,
        pool=pool,
        llm=llm,
        config=small_window_config(prune=False),
    )
    events: list[tuple[Any, dict[str, Any]]] = []
    session.subscribe(None, lambda event, payload: events.append((event, payload)))
    return session, llm, events


class TestSoftThresholdDoesNotBlockTheTurn:
    async def test_turns_return_while_the_background_compaction_is_still_running(
        self, db_path: str, pool: StorePool
    ) -> None:
        session, llm, events = await _gated_session(db_path, pool)
        conversation = generate(SESSIONS["bugfix_sprint"])
        turns = iter(conversation.turns)
        triggered = None
        for turn in turns:
            recorded = await session.record(list(turn.user), list(turn.assistant))
            if recorded.compaction_triggered:
                triggered = recorded
                break
        assert triggered is not None, "the soft threshold was never crossed"
        budget = ContextBudget.compute(session.model_info, session.config)
        assert session.context_tokens <= budget.usable, "crossed the hard limit, not the soft one"

        assert MnesisEvent.COMPACTION_TRIGGERED in _names(events)
        (reason,) = [p["reason"] for e, p in events if e is MnesisEvent.COMPACTION_TRIGGERED]
        assert reason == "soft_threshold"
        assert MnesisEvent.COMPACTION_COMPLETED not in _names(events)
        assert session.compaction_in_progress

        # More turns go through while the compaction waits for its model.
        later = []
        for _ in range(3):
            turn = next(turns)
            cost = message_tokens(turn.user, ESTIMATOR) + message_tokens(turn.assistant, ESTIMATOR)
            # Crossing the hard limit here would (rightly) wait for the gated model.
            assert session.context_tokens + cost <= budget.usable, "fixture turn too large"
            later.append(await session.record(list(turn.user), list(turn.assistant)))
            assert session.compaction_in_progress
        assert MnesisEvent.COMPACTION_COMPLETED not in _names(events)
        await asyncio.wait_for(llm.entered.wait(), timeout=60)

        llm.gate.set()
        await session.compaction_engine.wait_for_pending()
        assert not session.compaction_in_progress
        names = _names(events)
        completed = names.index(MnesisEvent.COMPACTION_COMPLETED)
        last_turn_event = max(
            i
            for i, (e, p) in enumerate(events)
            if e is MnesisEvent.MESSAGE_CREATED
            and p["message_id"] == later[-1].assistant_message_id
        )
        assert names.index(MnesisEvent.COMPACTION_TRIGGERED) < last_turn_event < completed
        report = await lineage_report(session.store, db_path, session.id)
        assert report.problems == []
        await session.close()


class TestHardThresholdBlocks:
    async def _over_the_limit(
        self, db_path: str, pool: StorePool, llm: Any
    ) -> tuple[MnesisSession, list[tuple[Any, dict[str, Any]]]]:
        session_id, _ = await seed_session(db_path, pool, "bugfix_sprint", 40)
        session = await MnesisSession.load(
            session_id, config=small_window_config(), db_path=db_path, pool=pool, llm=llm
        )
        budget = ContextBudget.compute(session.model_info, session.config)
        assert session.context_tokens > budget.usable
        events: list[tuple[Any, dict[str, Any]]] = []
        session.subscribe(None, lambda event, payload: events.append((event, payload)))
        return session, events

    async def test_record_returns_only_after_the_compaction_completed(
        self, db_path: str, pool: StorePool
    ) -> None:
        session, events = await self._over_the_limit(db_path, pool, FakeLLM(delay_seconds=0.001))
        recorded = await session.record("One more thing: rerun the linters.", "Linters pass.")

        names = _names(events)
        assert MnesisEvent.COMPACTION_COMPLETED in names
        assert not session.compaction_in_progress
        reasons = [p["reason"] for e, p in events if e is MnesisEvent.COMPACTION_TRIGGERED]
        assert reasons[0] == "hard_threshold"
        created = [
            i
            for i, (e, p) in enumerate(events)
            if e is MnesisEvent.MESSAGE_CREATED and p["message_id"] == recorded.assistant_message_id
        ]
        assert created[0] < names.index(MnesisEvent.COMPACTION_COMPLETED)
        budget = ContextBudget.compute(session.model_info, session.config)
        assert session.context_tokens <= budget.usable
        await session.close()

    async def test_send_compacts_before_the_model_is_called(
        self, db_path: str, pool: StorePool
    ) -> None:
        log: list[Any] = []

        def reply(request: LLMRequest) -> str:
            log.append(("model", request.purpose, request))
            return "ok, noted"

        session, _ = await self._over_the_limit(db_path, pool, FakeLLM(reply=reply))
        session.subscribe(None, lambda event, payload: log.append(("event", event, payload)))
        result = await session.send("Summarise where we are.")

        order = [(kind, what) for kind, what, _ in log]
        first_turn_call = order.index(("model", "turn"))
        completed = order.index(("event", MnesisEvent.COMPACTION_COMPLETED))
        assert completed < first_turn_call
        compaction = result.compaction_result
        assert compaction is not None
        assert compaction.level_used > 0 or compaction.pruned_tool_outputs > 0
        (request,) = [r for kind, what, r in log if kind == "model" and what == "turn"]
        estimator = TokenEstimator()
        sent = sum(
            estimator.estimate(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in request.messages
        )
        budget = ContextBudget.compute(session.model_info, session.config)
        assert sent <= budget.usable
        await session.close()

    async def test_a_turn_over_the_limit_waits_for_the_background_compaction(
        self, db_path: str, pool: StorePool
    ) -> None:
        session, llm, events = await _gated_session(db_path, pool)
        for turn in generate(SESSIONS["bugfix_sprint"]).turns:
            if (await session.record(list(turn.user), list(turn.assistant))).compaction_triggered:
                break
        await asyncio.wait_for(llm.entered.wait(), timeout=60)
        budget = ContextBudget.compute(session.model_info, session.config)
        big = ToolPart(
            tool_name="read_file",
            tool_call_id="call_big",
            input={"path": "src/app/generated/schema.py"},
            output="\n".join(f"FIELD_{i} = Column(String({i}))  # generated" for i in range(1_200)),
        )
        assert session.context_tokens + ESTIMATOR.estimate_part(big) > budget.usable

        # The turn reports when it starts waiting for the background compaction;
        # the gated model cannot finish first, so the turn must still be pending.
        engine = session.compaction_engine
        waiting = asyncio.Event()
        wait_for_pending = engine.wait_for_pending

        async def reporting_wait() -> None:
            waiting.set()
            await wait_for_pending()

        engine.wait_for_pending = reporting_wait  # type: ignore[method-assign]
        turn_task = asyncio.create_task(session.record("Read the generated schema.", [big]))
        waited = asyncio.create_task(waiting.wait())
        done, _ = await asyncio.wait(
            {turn_task, waited}, timeout=60, return_when=asyncio.FIRST_COMPLETED
        )
        assert turn_task not in done, "the turn went on while the context was over the limit"
        assert waited in done, "the turn never waited for the background compaction"
        assert not turn_task.done()
        assert MnesisEvent.COMPACTION_COMPLETED not in _names(events)

        llm.gate.set()
        await turn_task
        assert MnesisEvent.COMPACTION_COMPLETED in _names(events)
        assert session.context_tokens <= budget.usable
        await session.close()


class TestManualCompaction:
    async def test_compact_on_a_short_session_commits_nothing_and_loses_nothing(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        session = await MnesisSession.create(
            model="fake/model", db_path=db_path, pool=pool, llm=fake_llm
        )
        await session.record("hi", [TextPart(text="hello")])
        result = await session.compact()
        assert result.level_used == 0
        assert len(await session.conversation_messages()) == 2
        report = await lineage_report(session.store, db_path, session.id)
        assert report.problems == []
        await session.close()


class TestFixtureSessions:
    def test_the_same_spec_generates_the_same_session(self) -> None:
        spec = SESSIONS["bugfix_sprint"]
        first = generate.__wrapped__(spec)
        second = generate.__wrapped__(spec)
        assert first == second
        tools = [p for t in first.turns for p in t.assistant if isinstance(p, ToolPart)]
        assert len(tools) > spec.turns // 2
        assert sum(len(p.output or "") for p in tools) > 1_000 * len(tools)

    def test_sessions_have_300_to_3000_messages_and_every_planted_fact(self) -> None:
        for spec in SESSIONS.values():
            conversation = generate(spec)
            assert 300 <= spec.messages <= 3_000
            assert len(conversation.turns) * 2 == spec.messages
            assert [f.key for f in conversation.facts] == [
                "api_port",
                "no_migrations",
                "staging_db",
                "hashing_decision",
                "release_branch",
            ]
            for fact in conversation.facts:
                turn = conversation.turns[fact.turn]
                holder = turn.user if fact.role == "user" else turn.assistant
                assert any(fact.needle in getattr(p, "text", "") for p in holder)
