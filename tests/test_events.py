"""EventBus: delivery to sync and async handlers, isolation of failures, event names."""

from __future__ import annotations

import gc
import logging
import warnings
from typing import Any

import pytest

from mnesis import EventBus, InvalidArgumentError, MnesisEvent

# Every event name API.md lists.
DOCUMENTED_EVENTS = [
    "session.created",
    "session.closed",
    "message.created",
    "compaction.triggered",
    "compaction.completed",
    "compaction.failed",
    "prune.completed",
    "llm.retry",
    "doom_loop.detected",
    "map.started",
    "map.item_completed",
    "map.completed",
]

Received = list[tuple[str, MnesisEvent, dict[str, Any]]]


def new_received() -> Received:
    return []


def recorder(name: str, received: Received) -> Any:
    def handler(event: MnesisEvent, payload: dict[str, Any]) -> None:
        received.append((name, event, payload))

    return handler


class TestEventNames:
    @pytest.mark.parametrize("value", DOCUMENTED_EVENTS)
    def test_every_documented_event_exists(self, value: str) -> None:
        assert MnesisEvent(value).value == value

    def test_events_compare_equal_to_their_names(self) -> None:
        assert str(MnesisEvent.COMPACTION_COMPLETED) == "compaction.completed"
        assert f"{MnesisEvent.LLM_RETRY}" == "llm.retry"

    def test_the_seed_module_path_exposes_the_bus(self) -> None:
        from mnesis.events.bus import EventBus as SeedEventBus
        from mnesis.events.bus import MnesisEvent as SeedMnesisEvent

        assert SeedEventBus is EventBus and SeedMnesisEvent is MnesisEvent


class TestSyncHandlers:
    def test_a_handler_receives_the_event_and_its_payload(self) -> None:
        bus, received = EventBus(), new_received()
        bus.subscribe(MnesisEvent.MESSAGE_CREATED, recorder("h", received))
        bus.publish(MnesisEvent.MESSAGE_CREATED, {"message_id": "msg_1"})
        assert received == [("h", MnesisEvent.MESSAGE_CREATED, {"message_id": "msg_1"})]

    def test_a_missing_payload_arrives_as_an_empty_dict(self) -> None:
        bus, received = EventBus(), new_received()
        bus.subscribe(MnesisEvent.SESSION_CLOSED, recorder("h", received))
        bus.publish(MnesisEvent.SESSION_CLOSED)
        assert received == [("h", MnesisEvent.SESSION_CLOSED, {})]

    def test_handlers_only_receive_the_event_they_subscribed_to(self) -> None:
        bus, received = EventBus(), new_received()
        bus.subscribe(MnesisEvent.COMPACTION_FAILED, recorder("h", received))
        bus.publish(MnesisEvent.COMPACTION_COMPLETED, {})
        assert received == []

    def test_handlers_run_in_subscription_order(self) -> None:
        bus, received = EventBus(), new_received()
        for name in ("first", "second", "third"):
            bus.subscribe(MnesisEvent.LLM_RETRY, recorder(name, received))
        bus.publish(MnesisEvent.LLM_RETRY, {})
        assert [name for name, _, _ in received] == ["first", "second", "third"]

    def test_subscribing_to_none_receives_every_event(self) -> None:
        bus, received = EventBus(), new_received()
        bus.subscribe(None, recorder("all", received))
        for event in MnesisEvent:
            bus.publish(event, {"e": event.value})
        assert [event for _, event, _ in received] == list(MnesisEvent)

    def test_an_unsubscribed_handler_is_no_longer_called(self) -> None:
        bus, received = EventBus(), new_received()
        gone, kept = recorder("gone", received), recorder("kept", received)
        bus.subscribe(MnesisEvent.PRUNE_COMPLETED, gone)
        bus.subscribe(MnesisEvent.PRUNE_COMPLETED, kept)
        bus.subscribe(None, gone)
        bus.unsubscribe(MnesisEvent.PRUNE_COMPLETED, gone)
        bus.unsubscribe(None, gone)
        bus.publish(MnesisEvent.PRUNE_COMPLETED, {})
        assert [name for name, _, _ in received] == ["kept"]

    def test_unsubscribing_an_unknown_handler_is_ignored(self) -> None:
        bus = EventBus()
        bus.unsubscribe(MnesisEvent.MAP_STARTED, recorder("never", []))

    def test_a_handler_that_is_not_callable_is_rejected(self) -> None:
        with pytest.raises(InvalidArgumentError):
            EventBus().subscribe(MnesisEvent.MAP_STARTED, "not a function")  # type: ignore[arg-type]


class TestFailingHandlers:
    def test_a_failing_handler_breaks_neither_the_publisher_nor_the_other_handlers(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        bus, received = EventBus(), new_received()

        def broken(event: MnesisEvent, payload: dict[str, Any]) -> None:
            raise RuntimeError("handler bug")

        bus.subscribe(MnesisEvent.DOOM_LOOP_DETECTED, recorder("before", received))
        bus.subscribe(MnesisEvent.DOOM_LOOP_DETECTED, broken)
        bus.subscribe(MnesisEvent.DOOM_LOOP_DETECTED, recorder("after", received))
        bus.subscribe(None, recorder("wildcard", received))
        with caplog.at_level(logging.ERROR, logger="mnesis.events"):
            bus.publish(MnesisEvent.DOOM_LOOP_DETECTED, {})
        assert [name for name, _, _ in received] == ["before", "after", "wildcard"]
        assert "handler bug" in caplog.text

    async def test_a_failing_async_handler_breaks_nothing(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        bus, received = EventBus(), new_received()

        async def broken(event: MnesisEvent, payload: dict[str, Any]) -> None:
            raise RuntimeError("async handler bug")

        bus.subscribe(MnesisEvent.MAP_COMPLETED, broken)
        bus.subscribe(MnesisEvent.MAP_COMPLETED, recorder("sync", received))
        with caplog.at_level(logging.ERROR, logger="mnesis.events"):
            bus.publish(MnesisEvent.MAP_COMPLETED, {})
            await bus.drain()
        assert [name for name, _, _ in received] == ["sync"]
        assert "async handler bug" in caplog.text


class TestAsyncHandlers:
    async def test_an_async_handler_runs_on_the_loop_and_drain_waits_for_it(self) -> None:
        bus, received = EventBus(), new_received()

        async def handler(event: MnesisEvent, payload: dict[str, Any]) -> None:
            received.append(("async", event, payload))

        bus.subscribe(MnesisEvent.COMPACTION_TRIGGERED, handler)
        bus.publish(MnesisEvent.COMPACTION_TRIGGERED, {"session_id": "sess_1"})
        await bus.drain()
        assert received == [("async", MnesisEvent.COMPACTION_TRIGGERED, {"session_id": "sess_1"})]

    async def test_sync_and_async_handlers_of_one_event_all_run(self) -> None:
        bus, received = EventBus(), new_received()

        async def handler(event: MnesisEvent, payload: dict[str, Any]) -> None:
            received.append(("async", event, payload))

        bus.subscribe(MnesisEvent.MAP_ITEM_COMPLETED, handler)
        bus.subscribe(MnesisEvent.MAP_ITEM_COMPLETED, recorder("sync", received))
        bus.publish(MnesisEvent.MAP_ITEM_COMPLETED, {})
        await bus.drain()
        assert sorted(name for name, _, _ in received) == ["async", "sync"]

    def test_an_async_handler_without_a_running_loop_is_skipped_cleanly(self) -> None:
        bus, received = EventBus(), new_received()

        async def handler(event: MnesisEvent, payload: dict[str, Any]) -> None:
            received.append(("async", event, payload))  # pragma: no cover - never awaited

        bus.subscribe(MnesisEvent.SESSION_CREATED, handler)
        bus.subscribe(MnesisEvent.SESSION_CREATED, recorder("sync", received))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bus.publish(MnesisEvent.SESSION_CREATED, {})
            gc.collect()
        assert [name for name, _, _ in received] == ["sync"]
        assert not [w for w in caught if "never awaited" in str(w.message)]
