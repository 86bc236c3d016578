"""``ToolOutputPruner``, as the architecture document describes it.

Backward scan: the two most recent user turns are protected; completed,
unprotected tool outputs accumulate into a window of ``prune_protect_tokens``;
those beyond it are candidates; nothing is written unless the candidates add up
to more than ``prune_minimum_tokens``. A tombstone sets ``compacted_at`` only:
the output stays in the store and the builder renders one line instead.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mnesis import MnesisEvent, MnesisSession, StorePool, TextPart, TokenEstimator, ToolPart
from mnesis.compaction.pruner import ToolOutputPruner
from mnesis.llm import FakeLLM
from mnesis.models.parts import ToolStatus
from mnesis.store.shared.part_text import decode_stored_part
from tests.backends import fetch
from tests.compaction import small_window_config

ESTIMATOR = TokenEstimator()


def _output(turn: int, lines: int = 60) -> str:
    return "\n".join(f"turn{turn} line{i}: value_{i * 7 % 13} ok" for i in range(lines))


def _bash(turn: int, name: str = "bash", state: str = "completed", lines: int = 60) -> ToolPart:
    return ToolPart(
        tool_name=name,
        tool_call_id=f"call_{turn}_{name}_{state}",
        input={"command": f"make step{turn}"},
        output=_output(turn, lines) if state == "completed" else None,
        error_message="exit 2" if state == "error" else None,
        status=ToolStatus(state=state),  # type: ignore[arg-type]
    )


class PrunerSession:
    """A session with one tool call per turn and automatic compaction off."""

    def __init__(self, session: MnesisSession, db_path: str) -> None:
        self.session = session
        self.db_path = db_path
        self.turn_parts: list[list[ToolPart]] = []

    @classmethod
    async def create(cls, db_path: str, pool: StorePool) -> PrunerSession:
        session = await MnesisSession.create(
            model="fake/model",
            db_path=db_path,
            pool=pool,
            llm=FakeLLM(),
            config=small_window_config(auto=False),
        )
        return cls(session, db_path)

    async def turn(self, *parts: ToolPart) -> None:
        index = len(self.turn_parts)
        await self.session.record(
            f"Run step {index} please.", [TextPart(text=f"Running step {index}."), *parts]
        )
        self.turn_parts.append(list(parts))

    async def prune(self, protect: int, minimum: int, protected: list[str] | None = None) -> Any:
        settings: dict[str, Any] = {
            "prune_protect_tokens": protect,
            "prune_minimum_tokens": minimum,
        }
        if protected is not None:
            settings["protected_tools"] = protected
        config = small_window_config(**settings)
        pruner = ToolOutputPruner(self.session.store, ESTIMATOR, config)
        return await pruner.prune(self.session.id)

    async def stored_tools(self) -> list[list[ToolPart]]:
        """Tool parts of each turn's assistant message, as stored."""
        messages = await self.session.conversation_messages()
        return [m.tool_parts for m in messages if m.role == "assistant"]

    async def tombstoned(self) -> list[list[bool]]:
        return [[p.compacted_at is not None for p in t] for t in await self.stored_tools()]

    async def bash_turns(self, count: int, lines: int = 60) -> None:
        """``count`` turns with one completed ``bash`` call each."""
        for turn in range(count):
            await self.turn(_bash(turn, lines=lines))

    def cost(self, turn: int, index: int = 0) -> int:
        return ESTIMATOR.estimate_part(self.turn_parts[turn][index])


@pytest.fixture
async def s(db_path: str, pool: StorePool) -> AsyncIterator[PrunerSession]:
    session = await PrunerSession.create(db_path, pool)
    yield session
    await session.session.close()


class TestProtection:
    async def test_the_last_two_user_turns_are_never_pruned(self, s: PrunerSession) -> None:
        await s.bash_turns(6)
        result = await s.prune(protect=0, minimum=0)
        assert await s.tombstoned() == [[True], [True], [True], [True], [False], [False]]
        assert result.pruned_count == 4

    async def test_outputs_inside_the_protect_window_are_kept(self, s: PrunerSession) -> None:
        await s.bash_turns(7)
        # Turns 5 and 6 are the protected user turns; turns 4 and 3 fill the window exactly.
        window = s.cost(4) + s.cost(3)
        await s.prune(protect=window, minimum=0)
        assert await s.tombstoned() == [[True], [True], [True], [False], [False], [False], [False]]

    async def test_one_token_less_of_window_pushes_the_oldest_windowed_output_out(
        self, s: PrunerSession
    ) -> None:
        await s.bash_turns(7)
        await s.prune(protect=s.cost(4) + s.cost(3) - 1, minimum=0)
        assert await s.tombstoned() == [[True], [True], [True], [True], [False], [False], [False]]

    async def test_the_skill_tool_is_never_pruned_nor_counted(self, s: PrunerSession) -> None:
        await s.turn(_bash(0), _bash(0, name="skill"))
        await s.turn(_bash(1, name="skill", lines=400))
        await s.turn(_bash(2))
        await s.turn(_bash(3))
        await s.turn(_bash(4))
        # The window holds exactly turn 2's bash output; the big skill output does not count.
        result = await s.prune(protect=s.cost(2), minimum=0)
        assert await s.tombstoned() == [[True, False], [False], [False], [False], [False]]
        assert result.pruned_count == 1

    async def test_the_protected_tool_list_is_configurable(self, s: PrunerSession) -> None:
        await s.turn(_bash(0, name="grep"), _bash(0))
        await s.turn(_bash(1))
        await s.turn(_bash(2))
        await s.prune(protect=0, minimum=0, protected=["grep"])
        assert await s.tombstoned() == [[False, True], [False], [False]]

    async def test_only_completed_tool_calls_are_pruned(self, s: PrunerSession) -> None:
        await s.turn(
            _bash(0, state="error"),
            _bash(0, state="pending"),
            _bash(0, state="running"),
            _bash(0),
        )
        await s.turn(_bash(1))
        await s.turn(_bash(2))
        await s.prune(protect=0, minimum=0)
        assert await s.tombstoned() == [[False, False, False, True], [False], [False]]


class TestMinimumGate:
    async def test_nothing_is_written_when_candidates_do_not_exceed_the_minimum(
        self, s: PrunerSession
    ) -> None:
        await s.bash_turns(5)
        prunable = s.cost(0) + s.cost(1) + s.cost(2)
        before = await s.session.store.context_token_total(s.session.id)
        result = await s.prune(protect=0, minimum=prunable)
        assert result.candidate_tokens == prunable
        assert result.pruned_count == 0
        assert await s.tombstoned() == [[False]] * 5
        assert await s.session.store.context_token_total(s.session.id) == before

    async def test_one_token_over_the_minimum_prunes_every_candidate(
        self, s: PrunerSession
    ) -> None:
        await s.bash_turns(5)
        prunable = s.cost(0) + s.cost(1) + s.cost(2)
        result = await s.prune(protect=0, minimum=prunable - 1)
        assert result.pruned_count == 3
        assert await s.tombstoned() == [[True], [True], [True], [False], [False]]


class TestTombstones:
    async def test_a_tombstone_sets_compacted_at_and_keeps_the_output_in_the_store(
        self, s: PrunerSession, db_path: str
    ) -> None:
        await s.bash_turns(4)
        await s.prune(protect=0, minimum=0)
        stored = await s.stored_tools()
        assert stored[0][0].compacted_at is not None
        assert stored[0][0].output == _output(0)
        assert stored[0][0].status.state == "completed"
        rows = fetch(
            db_path,
            "SELECT id, content, text_content, compacted_at FROM message_parts "
            "WHERE tool_call_id = ?",
            s.turn_parts[0][0].tool_call_id,
        )
        ((part_id, content, text_content, compacted_at),) = rows
        assert compacted_at == stored[0][0].compacted_at
        raw = decode_stored_part(part_id, "tool", content, text_content, None, None, None, None)
        assert isinstance(raw, ToolPart)
        assert raw.output == _output(0)

    async def test_the_builder_renders_a_one_line_tombstone(self, s: PrunerSession) -> None:
        await s.bash_turns(4)
        await s.session.build_context()  # warm the builder's render cache
        await s.prune(protect=0, minimum=0)
        built = await s.session.build_context()
        text = "\n".join(str(m.content) for m in built.messages)
        stored = await s.stored_tools()
        for turn in (0, 1):
            stamp = stored[turn][0].compacted_at
            assert f"[Tool 'bash' output compacted at {stamp}]" in text
            assert _output(turn) not in text
        for turn in (2, 3):
            assert _output(turn) in text
        assert len(re.findall(r"\[Tool 'bash' output compacted at \d+\]", text)) == 2

    async def test_pruning_lowers_the_context_size_by_what_it_reports(
        self, s: PrunerSession
    ) -> None:
        await s.bash_turns(5)
        before = await s.session.store.context_token_total(s.session.id)
        result = await s.prune(protect=0, minimum=0)
        after = await s.session.store.context_token_total(s.session.id)
        assert result.pruned_tokens > 0
        assert before - after == result.pruned_tokens

    async def test_a_second_pass_without_new_output_writes_nothing(self, s: PrunerSession) -> None:
        await s.bash_turns(5)
        first = await s.prune(protect=0, minimum=0)
        marks = [p.compacted_at for t in await s.stored_tools() for p in t]
        second = await s.prune(protect=0, minimum=0)
        assert first.pruned_count == 3 and second.pruned_count == 0
        assert [p.compacted_at for t in await s.stored_tools() for p in t] == marks


class TestPruningInsideCompaction:
    async def test_compaction_prunes_first_and_publishes_prune_completed(
        self, s: PrunerSession, db_path: str, pool: StorePool
    ) -> None:
        await s.bash_turns(12, lines=200)
        session = await MnesisSession.load(
            s.session.id,
            config=small_window_config(prune_protect_tokens=0, prune_minimum_tokens=0),
            db_path=db_path,
            pool=pool,
            llm=FakeLLM(),
        )
        await s.session.close()
        events: list[tuple[Any, dict[str, Any]]] = []
        session.subscribe(None, lambda e, p: events.append((e, p)))
        result = await session.compact()
        names = [e for e, _ in events]
        assert result.pruned_tool_outputs == 10
        assert MnesisEvent.PRUNE_COMPLETED in names
        assert names.index(MnesisEvent.PRUNE_COMPLETED) < names.index(
            MnesisEvent.COMPACTION_COMPLETED
        )
        await session.close()
