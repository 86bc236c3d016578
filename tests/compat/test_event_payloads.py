"""Every payload a real session, compaction and map run publish has the keys its
``mnesis.events`` payload class declares: each required key, and no key it does not
declare (issue 31)."""

from __future__ import annotations

from typing import Any

from mnesis import MnesisConfig, MnesisEvent, MnesisSession, StorePool
from mnesis.config import CompactionConfig
from mnesis.events import (
    CompactionCompletedPayload,
    CompactionFailedPayload,
    CompactionTriggeredPayload,
    DoomLoopDetectedPayload,
    EventBus,
    LlmRetryPayload,
    MapCompletedPayload,
    MapItemCompletedPayload,
    MapStartedPayload,
    MessageCreatedPayload,
    PruneCompletedPayload,
    SessionClosedPayload,
    SessionCreatedPayload,
)
from mnesis.llm import Fail, FakeLLM, Respond
from mnesis.models.parts import ToolPart, ToolStatus
from mnesis.operators import LLMMap

PAYLOADS: dict[MnesisEvent, Any] = {
    MnesisEvent.SESSION_CREATED: SessionCreatedPayload,
    MnesisEvent.SESSION_CLOSED: SessionClosedPayload,
    MnesisEvent.MESSAGE_CREATED: MessageCreatedPayload,
    MnesisEvent.COMPACTION_TRIGGERED: CompactionTriggeredPayload,
    MnesisEvent.COMPACTION_COMPLETED: CompactionCompletedPayload,
    MnesisEvent.COMPACTION_FAILED: CompactionFailedPayload,
    MnesisEvent.PRUNE_COMPLETED: PruneCompletedPayload,
    MnesisEvent.LLM_RETRY: LlmRetryPayload,
    MnesisEvent.DOOM_LOOP_DETECTED: DoomLoopDetectedPayload,
    MnesisEvent.MAP_STARTED: MapStartedPayload,
    MnesisEvent.MAP_ITEM_COMPLETED: MapItemCompletedPayload,
    MnesisEvent.MAP_COMPLETED: MapCompletedPayload,
}


def _check(received: list[tuple[MnesisEvent, dict[str, Any]]]) -> set[MnesisEvent]:
    for event, payload in received:
        declared = PAYLOADS[event]
        keys = set(payload)
        missing = declared.__required_keys__ - keys
        unknown = keys - declared.__required_keys__ - declared.__optional_keys__
        assert (event, missing, unknown) == (event, set(), set())
    return {event for event, _ in received}


async def test_session_and_compaction_payloads(db_path: str, pool: StorePool) -> None:
    bus = EventBus()
    received: list[tuple[MnesisEvent, dict[str, Any]]] = []
    bus.subscribe_all(lambda event, payload: received.append((event, payload)))
    config = MnesisConfig(
        compaction=CompactionConfig(
            compaction_model="extractive", prune_protect_tokens=0, prune_minimum_tokens=0
        ),
    )
    config.session.doom_loop_threshold = 2
    session = await MnesisSession.create(
        model="fake/x", db_path=db_path, pool=pool, config=config, event_bus=bus
    )
    for i in range(8):
        tool = ToolPart(
            tool_name="read_file",
            tool_call_id=f"call_{i}",
            input={"path": "same.txt"},
            output="line of output\n" * 200,
            status=ToolStatus(state="completed"),
        )
        await session.record(f"question {i}", [tool])
    await session.compact()
    await session.close()
    seen = _check(received)
    assert {
        MnesisEvent.SESSION_CREATED,
        MnesisEvent.MESSAGE_CREATED,
        MnesisEvent.DOOM_LOOP_DETECTED,
        MnesisEvent.COMPACTION_TRIGGERED,
        MnesisEvent.PRUNE_COMPLETED,
        MnesisEvent.COMPACTION_COMPLETED,
        MnesisEvent.SESSION_CLOSED,
    } <= seen


async def test_map_and_retry_payloads() -> None:
    bus = EventBus()
    received: list[tuple[MnesisEvent, dict[str, Any]]] = []
    bus.subscribe_all(lambda event, payload: received.append((event, payload)))
    llm = FakeLLM().script(Fail("boom"), Respond("fine"))
    mapper = LLMMap(None, bus, model="fake/map", llm=llm, retry_backoff=0)
    await mapper.run_all(["a"], "Echo {{ item }}", max_retries=1)
    assert _check(received) == {
        MnesisEvent.MAP_STARTED,
        MnesisEvent.LLM_RETRY,
        MnesisEvent.MAP_ITEM_COMPLETED,
        MnesisEvent.MAP_COMPLETED,
    }
