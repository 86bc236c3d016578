"""``ToolOutputPruner``: tombstones stale tool outputs before summarising.

Backward scan over the raw messages after the last summary in the context:
the two most recent user turns are protected, then tool outputs accumulate into
a protect window of ``prune_protect_tokens`` (scaled to the window unless set);
completed, unprotected tool parts beyond it are candidates. Nothing is written
unless the candidates add up to more than ``prune_minimum_tokens``. A tombstone
only sets ``compacted_at``:
the output stays in the store and the builder renders a one-line stand-in.
"""

from __future__ import annotations

import time

from mnesis.config import MnesisConfig
from mnesis.models.message import MessageWithParts, PruneResult
from mnesis.models.parts import ToolPart
from mnesis.models.window import REFERENCE_WINDOW, WindowSettings
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["PruneResult", "ToolOutputPruner", "ToolOutputPrunerAsync"]


class ToolOutputPruner:
    """Tombstones tool outputs outside the protect window."""

    def __init__(self, store: ImmutableStore, estimator: TokenEstimator, config: MnesisConfig):
        self.store = store
        self.estimator = estimator
        self.config = config

    async def prune(
        self, session_id: str, *, settings: WindowSettings | None = None
    ) -> PruneResult:
        """Run one prune pass over the session's current context.

        ``settings`` carries the protect window and minimum of the session's context
        window; without it the configured values (the documented ones: a 200k window)."""
        cfg = self.config.compaction
        if settings is None:
            settings = WindowSettings.derive(REFERENCE_WINDOW, cfg)
        items = await self.store.get_context_items(session_id)
        last_summary = max((i.position for i in items if i.item_type == "summary"), default=-1)
        ids = [i.item_id for i in items if i.item_type == "message" and i.position > last_summary]
        messages = await self.store.get_messages_by_ids(ids)
        protected = set(cfg.protected_tools)
        candidates: list[tuple[MessageWithParts, ToolPart, int]] = []
        user_turns = 0
        window = 0
        candidate_tokens = 0
        scanned = 0
        for message in reversed(messages):
            if message.role == "user":
                user_turns += 1
            if user_turns < 2:
                continue
            stop = False
            for part in reversed(message.parts):
                if not isinstance(part, ToolPart):
                    continue
                if part.status.compacted_at is not None:
                    stop = True
                    break
                if part.status.state != "completed" or part.tool_name in protected:
                    continue
                scanned += 1
                cost = self.estimator.estimate_part(part)
                window += cost
                if window > settings.prune_protect_tokens:
                    candidates.append((message, part, cost))
                    candidate_tokens += cost
            if stop:
                break
        result = PruneResult(candidate_tokens=candidate_tokens, candidates_scanned=scanned)
        if candidate_tokens <= settings.prune_minimum_tokens:
            return result
        now = int(time.time() * 1000)
        touched: dict[str, MessageWithParts] = {}
        tombstones: list[tuple[str, int, int]] = []
        for message, part, cost in candidates:
            assert part.id is not None
            part.status.compacted_at = now
            tombstone_cost = self.estimator.estimate_part(part)
            tombstones.append((part.id, now, tombstone_cost))
            touched[message.id] = message
            result.pruned_count += 1
            result.pruned_tokens += max(0, cost - tombstone_cost)
        await self.store.tombstone_parts(
            tombstones,
            [(m.id, self.estimator.estimate_message(m)) for m in touched.values()],
        )
        return result


ToolOutputPrunerAsync = ToolOutputPruner
"""The seeds' name of the pruner (it is async; there is no sync variant)."""
