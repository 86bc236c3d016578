"""Events published by sessions, compaction and operators."""

from mnesis.events.bus import EventBus, EventHandler, MnesisEvent

__all__ = ["EventBus", "EventHandler", "MnesisEvent"]
