"""Counters the demo's event handlers keep while the session runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnesis.events.bus import MnesisEvent
from mnesis.models.message import CompactionResult

__all__ = ["LiveStats"]


@dataclass
class LiveStats:
    """Counters the event handlers keep while the demo runs."""

    turn: int = 0
    context_tokens: int = 0
    compactions: int = 0
    """Runs that committed a summary."""
    prunes: int = 0
    """Pruning passes; ``pruned_outputs`` and ``pruned_tokens`` are what they tombstoned."""
    pruned_outputs: int = 0
    pruned_tokens: int = 0
    failures: int = 0
    runs: list[tuple[int, CompactionResult]] = field(default_factory=list)

    def on_compaction(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        """``COMPACTION_COMPLETED`` handler: keep runs that changed the context, and count
        the ones that committed a summary."""
        result = CompactionResult.model_validate(payload["result"])
        if result.level_used or result.pruned_tool_outputs:
            self.runs.append((self.turn, result))
        if result.level_used:
            self.compactions += 1

    def on_prune(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        """``PRUNE_COMPLETED`` handler."""
        self.prunes += 1
        self.pruned_outputs += int(payload.get("pruned_count", 0))
        self.pruned_tokens += int(payload.get("pruned_tokens", 0))

    def on_failure(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        """``COMPACTION_FAILED`` handler."""
        self.failures += 1
