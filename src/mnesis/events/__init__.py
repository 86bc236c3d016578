"""Events published by sessions, compaction and operators, and their payloads."""

from mnesis.events.bus import EventBus, EventHandler, Handler, MnesisEvent
from mnesis.events.payloads import (
    CompactionCompletedPayload,
    CompactionFailedPayload,
    CompactionTriggeredPayload,
    DoomLoopDetectedPayload,
    LlmRetryPayload,
    MapCompletedPayload,
    MapItemCompletedPayload,
    MapStartedPayload,
    MessageCreatedPayload,
    PruneCompletedPayload,
    SessionClosedPayload,
    SessionCreatedPayload,
)

__all__ = [
    "CompactionCompletedPayload",
    "CompactionFailedPayload",
    "CompactionTriggeredPayload",
    "DoomLoopDetectedPayload",
    "EventBus",
    "EventHandler",
    "Handler",
    "LlmRetryPayload",
    "MapCompletedPayload",
    "MapItemCompletedPayload",
    "MapStartedPayload",
    "MessageCreatedPayload",
    "MnesisEvent",
    "PruneCompletedPayload",
    "SessionClosedPayload",
    "SessionCreatedPayload",
]
