"""The behaviours and guarantees seeds 000, 001, 002 and 004 state, in their documented form."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.compaction import (
    SummaryCandidate,
    level1_summarise,
    level2_summarise,
    level3_deterministic,
)
from mnesis.compaction.file_ids import append_file_ids_footer
from mnesis.config import CompactionConfig
from mnesis.context import ContextBuilder
from mnesis.errors import InvalidArgumentError
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.models.config import FileConfig, ModelInfo, StoreConfig
from mnesis.models.message import (
    ContextBudget,
    FileRefPart,
    Message,
    MessageWithParts,
    TextPart,
    TokenUsage,
    ToolPart,
    ToolStatus,
)
from mnesis.models.summary import SummaryNode
from mnesis.operators import AgenticMap, LLMMap
from mnesis.operators.template_utils import require_item_variable
from mnesis.store.immutable import ImmutableStore
from mnesis.store.summary_dag import SummaryDAGStore
from mnesis.tokens import TokenEstimator

FILE_A = "file_" + "A" * 26
FILE_B = "file_" + "B" * 26
BUDGET = ContextBudget(context_limit=32_000, reserved_output_tokens=2_000,
                       compaction_buffer=4_000, usable=26_000)  # fmt: skip


def _msg(index: int, role: str, text: str) -> MessageWithParts:
    message = Message(id=f"msg_{index:026d}", session_id="sess_" + "0" * 26, role=role,
                      created_at=1_700_000_000_000 + index)  # fmt: skip
    return MessageWithParts(message=message, parts=[TextPart(text=text)])


# -- seed 002: the levels ------------------------------------------------------------
def test_level3_with_no_messages_returns_a_valid_candidate() -> None:
    candidate = level3_deterministic([], BUDGET, TokenEstimator())
    assert isinstance(candidate, SummaryCandidate)
    assert candidate.compaction_level == 3 and candidate.messages_covered == 0
    assert 0 < candidate.token_count <= BUDGET.usable


def test_level3_fits_and_keeps_every_file_id() -> None:
    messages = [_msg(0, "user", f"read {FILE_A} " + "x " * 4000)]
    messages += [_msg(i, "assistant", "long answer " * 500) for i in range(1, 30)]
    messages.append(_msg(30, "user", f"and {FILE_B}"))
    candidate = level3_deterministic(messages, BUDGET, TokenEstimator())
    assert candidate.token_count <= BUDGET.usable
    assert candidate.compaction_level == 3
    assert FILE_A in candidate.text and FILE_B in candidate.text
    assert "[LCM File IDs:" in candidate.text


async def test_levels_1_and_2_escalate_on_failure_or_no_compression() -> None:
    messages = [_msg(i, "user" if i % 2 == 0 else "assistant", f"turn {i} " * 40) for i in range(8)]

    async def broken(model: str, msgs: list[dict[str, Any]], max_tokens: int) -> str:
        raise RuntimeError("provider down")

    async def verbose(model: str, msgs: list[dict[str, Any]], max_tokens: int) -> str:
        return "Goal: everything. " * 2000

    est = TokenEstimator()
    for level in (level1_summarise, level2_summarise):
        assert await level(messages, "fake/x", BUDGET, est, broken) is None
        assert await level(messages, "fake/x", BUDGET, est, verbose) is None


async def test_level1_summary_carries_the_file_ids_footer() -> None:
    messages = [_msg(0, "user", f"open {FILE_A}")]
    messages += [_msg(i, "assistant", f"work item {i} " * 80) for i in range(1, 6)]

    async def good(model: str, msgs: list[dict[str, Any]], max_tokens: int) -> str:
        return "## Goal\nMigrate the service.\n## Completed Work\n- opened the file"

    candidate = await level1_summarise(messages, "fake/x", BUDGET, TokenEstimator(), good)
    assert candidate is not None and candidate.compaction_level == 1
    assert f"[LCM File IDs: {FILE_A}" in candidate.text


def test_append_file_ids_footer() -> None:
    text = append_file_ids_footer("Summary.", [FILE_A, FILE_B])
    assert text == f"Summary.\n\n[LCM File IDs: {FILE_A}, {FILE_B}]"
    assert append_file_ids_footer(text, [FILE_A]) == f"Summary.\n\n[LCM File IDs: {FILE_A}]"
    assert append_file_ids_footer("Summary.", []) == "Summary."


# -- seed 002: the engine ------------------------------------------------------------
async def test_overflow_checks_respect_auto(db_path: str, pool: StorePool) -> None:
    model = ModelInfo.from_model_string(
        "fake/x", {"context_limit": 32_000, "max_output_tokens": 2_000}
    )
    for auto in (True, False):
        config = MnesisConfig(compaction=CompactionConfig(auto=auto))
        session = await MnesisSession.create(model="fake/x", db_path=db_path, pool=pool,
                                             config=config)  # fmt: skip
        engine = session.compaction_engine
        big = TokenUsage(input=31_000)
        assert engine.is_soft_overflow(big, model) is auto
        assert engine.is_overflow(big, model) is auto
        assert engine.check_and_trigger(session.id, big, model) is False or auto
        assert engine.is_hard_overflow(big, model)
        assert not engine.is_soft_overflow(TokenUsage(input=10), model)
        await engine.wait_for_pending()
        await session.close()


async def test_manual_compact_summarises_everything_outside_the_fresh_tail(
    db_path: str, pool: StorePool
) -> None:
    config = MnesisConfig(compaction=CompactionConfig(fresh_tail_count=4))
    session = await MnesisSession.create(model="fake/x", db_path=db_path, pool=pool, config=config)
    bus_events: list[tuple[MnesisEvent, dict[str, Any]]] = []
    session.event_bus.subscribe_all(lambda e, p: bus_events.append((e, p)))
    for i in range(6):
        await session.record(f"question {i} about port 8443", f"answer {i}")
    result = await session.compact()
    assert result.level_used >= 1
    assert result.compacted_message_count == 8  # 12 messages, the last 4 are the fresh tail
    items = await session.store.get_context_items(session.id)
    assert [i.item_type for i in items] == ["summary"] + ["message"] * 4
    completed = [p for e, p in bus_events if e is MnesisEvent.COMPACTION_COMPLETED]
    assert completed and completed[0]["level_used"] == result.level_used
    assert completed[0]["tokens_before"] == result.tokens_before
    assert completed[0]["result"]["compacted_message_count"] == 8
    assert {e for e, _p in bus_events} >= {MnesisEvent.MESSAGE_CREATED,
                                           MnesisEvent.COMPACTION_TRIGGERED}  # fmt: skip
    await session.close()


# -- seed 004: the context builder ---------------------------------------------------
async def test_context_builder_renders_tombstones_and_file_refs(
    db_path: str, pool: StorePool
) -> None:
    session = await MnesisSession.create(model="fake/x", db_path=db_path, pool=pool,
                                         system_prompt="You are terse.")  # fmt: skip
    tool = ToolPart(tool_name="bash", tool_call_id="c1", input={"cmd": "ls"},
                    output="a\nb\n" * 200, status=ToolStatus(state="completed"))  # fmt: skip
    ref = FileRefPart(content_id="0" * 64, path="src/app.py", file_type="python",
                      token_count=5000, exploration_summary="3 functions")  # fmt: skip
    await session.record("list files", [TextPart(text="Listing."), tool])
    await session.record("show app", [TextPart(text="Here."), ref])
    stored = await session.store.get_messages(session.id)
    part = next(p for m in stored for p in m.parts if isinstance(p, ToolPart))
    assert part.id is not None
    await session.store.tombstone_parts([(part.id, 1_736_000_000_000, 12)], [])
    store = session.store
    builder = ContextBuilder(store, SummaryDAGStore(store), TokenEstimator())
    built = await builder.build(session.id, session.model_info, "You are terse.", session.config)
    text = "\n".join(str(m.content) for m in built.messages)
    assert "[Tool 'bash' output compacted at 1736000000000]" in text
    assert "a\nb\na\nb" not in text
    assert "[FILE: src/app.py]" in text
    assert built.system_prompt == "You are terse."
    assert 0 < built.token_estimate <= built.budget.usable
    assert built.has_summary is False
    await session.close()


# -- seed 000: store, DAG store, append-only ------------------------------------------
async def test_immutable_store_construction_as_documented(db_path: str) -> None:
    config = MnesisConfig(store=StoreConfig(db_path=Path(db_path)))
    pool = StorePool()
    store = ImmutableStore(config.store, pool=pool)
    await store.initialize()
    assert await store.list_sessions() == []
    await store.close()
    await pool.close_all()


async def test_summary_dag_store_as_documented(db_path: str, pool: StorePool) -> None:
    session = await MnesisSession.create(model="fake/x", db_path=db_path, pool=pool)
    for i in range(3):
        await session.record(f"q{i}", f"a{i}")
    dag = SummaryDAGStore(session.store)
    assert await dag.get_node_by_id("sum_" + "0" * 26) is None
    messages = await session.store.get_messages(session.id)
    node = SummaryNode(id="sum_" + "1" * 26, session_id=session.id, kind="leaf", level=0,
                       compaction_level=1, content="Asked three questions.", token_count=6,
                       span_start_message_id=messages[0].id,
                       span_end_message_id=messages[3].id)  # fmt: skip
    await dag.insert_node(node, source_message_ids=[m.id for m in messages[:4]])
    fetched = await dag.get_node_by_id(node.id)
    assert fetched is not None and fetched.content == "Asked three questions."
    assert await dag.get_source_message_ids(node.id) == [m.id for m in messages[:4]]
    items = await session.store.get_context_items(session.id)
    assert [i.item_type for i in items] == ["summary", "message", "message"]
    assert await dag.mark_superseded([node.id]) == 1
    assert await dag.get_node_by_id(node.id) is not None  # superseded, never deleted
    assert all(i.item_id != node.id for i in await session.store.get_context_items(session.id))
    with pytest.raises(InvalidArgumentError):
        await dag.insert_node(node)
    await session.close()


async def test_store_is_append_only(db_path: str, pool: StorePool) -> None:
    session = await MnesisSession.create(model="fake/x", db_path=db_path, pool=pool)
    await session.record("keep me", "kept")
    await session.close()
    await pool.close_all()
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute("DELETE FROM messages")
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute("DELETE FROM message_parts")
    finally:
        conn.close()


# -- seed 000/001: events, operators, config -----------------------------------------
def test_event_bus_as_documented() -> None:
    bus = EventBus()
    seen: list[str] = []
    bus.subscribe_all(lambda e, p: seen.append(f"all:{e.value}"))
    bus.subscribe(MnesisEvent.COMPACTION_COMPLETED, lambda e, p: seen.append(str(p["level_used"])))
    bus.subscribe(MnesisEvent.COMPACTION_COMPLETED, lambda e, p: 1 / 0)  # swallowed

    async def never_run(e: MnesisEvent, p: dict[str, Any]) -> None:  # no loop: skipped
        seen.append("async")

    bus.subscribe(MnesisEvent.COMPACTION_COMPLETED, never_run)
    bus.publish(MnesisEvent.COMPACTION_COMPLETED, {"level_used": 2})
    assert seen == ["2", "all:compaction.completed"]


async def test_operators_take_the_session_bus(db_path: str, pool: StorePool) -> None:
    config = MnesisConfig(store=StoreConfig(db_path=db_path))
    session = await MnesisSession.create(model="fake/x", db_path=db_path, pool=pool)
    events: list[MnesisEvent] = []
    session.event_bus.subscribe_all(lambda e, p: events.append(e))
    LLMMap(config.operators, event_bus=session.event_bus)
    agentic_map = AgenticMap(config.operators, event_bus=session.event_bus, pool=pool,
                             session_config=config)  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="no model"):
        agentic_map.run(["a"], "Do {{ item }}")
    batch = await agentic_map.run_all(["a", "b"], "Summarise {{ item }}", model="fake/x",
                                      max_turns=1)  # fmt: skip
    assert batch.completed == 2
    assert {
        MnesisEvent.MAP_STARTED,
        MnesisEvent.MAP_ITEM_COMPLETED,
        MnesisEvent.MAP_COMPLETED,
    } <= set(events)
    await session.close()


def test_template_check_uses_the_ast() -> None:
    require_item_variable("Review {{ item.title }}")
    with pytest.raises(ValueError):
        require_item_variable("No variable here {# {{ item }} #}")


def test_config_as_documented(tmp_path: Path) -> None:
    assert StoreConfig(db_path=tmp_path / "x.db").db_path == str(tmp_path / "x.db")
    assert StoreConfig(db_path="~/.mnesis/x.db").db_path == str(Path.home() / ".mnesis/x.db")
    assert FileConfig(exploration_summary_model="gpt-4o-mini").exploration_summary_model
    config = MnesisConfig()
    assert config.compaction.soft_threshold_fraction == 0.6
    assert config.compaction.prune_protect_tokens == 40_000
    assert config.compaction.prune_minimum_tokens == 20_000
    assert config.compaction.level2_enabled is True
    assert config.file.inline_threshold == 10_000
    assert config.operators.llm_map_concurrency == 16
    assert config.operators.agentic_map_concurrency == 4
    assert config.session.doom_loop_threshold == 3
    assert "skill" in config.compaction.protected_tools
