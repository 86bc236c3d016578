"""The doom-loop detector: the same tool call with the same input, again and again."""

from __future__ import annotations

import json
from collections import deque

from mnesis.config import MnesisConfig
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.models.parts import ToolPart

__all__ = ["DoomLoopDetector"]


class DoomLoopDetector:
    """Watches one session's tool calls; publishes ``doom_loop.detected`` when the last
    ``session.doom_loop_threshold`` calls are identical."""

    def __init__(self, config: MnesisConfig, bus: EventBus, session_id: str) -> None:
        self._config = config
        self._bus = bus
        self._session_id = session_id
        self._signatures: deque[str] = deque(maxlen=config.session.doom_loop_threshold)

    def check(self, tool_parts: list[ToolPart]) -> bool:
        """Record ``tool_parts``; True if they complete a run of identical calls."""
        detected = False
        threshold = self._config.session.doom_loop_threshold
        for part in tool_parts:
            signature = (
                part.tool_name + "\x00" + json.dumps(part.input, sort_keys=True, default=str)
            )
            self._signatures.append(signature)
            if len(self._signatures) >= threshold and len(set(self._signatures)) == 1:
                detected = True
                self._bus.publish(
                    MnesisEvent.DOOM_LOOP_DETECTED,
                    {
                        "session_id": self._session_id,
                        "tool_name": part.tool_name,
                        "input": part.input,
                        "count": len(self._signatures),
                    },
                )
        return detected
