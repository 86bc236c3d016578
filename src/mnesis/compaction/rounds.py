"""One compaction run's work, once the engine holds the session: prune, then rounds of
leaf and condense passes until the context is under its drain target (or the round cap,
an abort or a lack of anything worth summarising stops it), then the stop reason.

:class:`~mnesis.compaction.engine.CompactionEngine` takes the locks, publishes the events
and keeps the result; :class:`CompactionRounds` decides which pass each round runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from mnesis.compaction.breaker import CircuitBreaker
from mnesis.compaction.passes import CompactionPasses
from mnesis.compaction.planner import LEAF_CHUNK_TOKENS
from mnesis.compaction.pruner import ToolOutputPruner
from mnesis.compaction.stop import RunEnd, conclude
from mnesis.compaction.summariser import Summariser
from mnesis.config import MnesisConfig
from mnesis.context.builder import ContextBudget
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.models.message import CompactionResult
from mnesis.models.window import WindowSettings
from mnesis.store.immutable import ImmutableStore

__all__ = ["CompactionRounds", "run_settings"]


def run_settings(settings: WindowSettings, budget: ContextBudget) -> WindowSettings:
    """``settings`` for one run: a triggered run writes one leaf, so its chunk covers the
    gap from the soft threshold down to the drain target (never more than the
    documented chunk)."""
    gap = int(settings.soft_limit(budget.usable)) - settings.drain_target(budget.usable)
    chunk = min(LEAF_CHUNK_TOKENS, max(settings.leaf_chunk_tokens, gap))
    return dataclasses.replace(settings, leaf_chunk_tokens=chunk)


@dataclass(frozen=True, slots=True)
class CompactionRounds:
    """Runs the prune and the rounds of one session's compaction into its result."""

    store: ImmutableStore
    config: MnesisConfig
    bus: EventBus
    pruner: ToolOutputPruner
    passes: CompactionPasses
    breaker: CircuitBreaker

    async def run(
        self,
        session_id: str,
        result: CompactionResult,
        ladder: Sequence[Summariser],
        budget: ContextBudget,
        settings: WindowSettings,
        *,
        abort: asyncio.Event | None,
        force: bool,
        fan_in: int,
    ) -> None:
        """Compact ``session_id`` with ``ladder`` and set ``result``'s counts and stop
        reason. ``force`` (an explicit request) summarises everything before the fresh
        tail even under the target; ``fan_in`` is how many same-depth summaries one
        condensed summary merges."""
        cfg = self.config.compaction
        settings = run_settings(settings, budget)
        target = settings.drain_target(budget.usable)
        soft_limit = settings.soft_limit(budget.usable)
        items = await self.store.get_context_items(session_id)
        result.tokens_before = sum(i.tokens for i in items)
        if cfg.prune:
            await self._prune(session_id, result, settings)
        exhausted = aborted = False
        for round_index in range(cfg.max_compaction_rounds):
            if abort is not None and abort.is_set():
                aborted = True
                break
            items = await self.store.get_context_items(session_id)
            total = sum(i.tokens for i in items)
            manual = force and total <= target
            over = total > target or manual
            condense = cfg.condensation_enabled and not manual
            progressed = False
            if condense and (over or result.rounds):
                # A full carry first: keeps the DAG balanced whether or not room is needed.
                progressed = await self.passes.condense(
                    session_id, items, result, ladder, settings, fan_in=fan_in
                )
            if not progressed and over:
                rounds_left = cfg.max_compaction_rounds - round_index
                progressed = await self.passes.leaf(
                    session_id,
                    items,
                    total - target,
                    rounds_left,
                    budget,
                    settings,
                    result,
                    ladder,
                    manual,
                )
                if not progressed and condense and total > soft_limit:
                    progressed = await self.passes.condense(
                        session_id, items, result, ladder, settings, fan_in=fan_in, pressure=True
                    )
            if not progressed:
                break
            result.rounds += 1
        else:
            exhausted = True
        items = await self.store.get_context_items(session_id)
        result.tokens_after = sum(i.tokens for i in items)
        uses_model = any(rung.uses_model for rung in ladder)
        end = RunEnd(
            target=target,
            soft_limit=soft_limit,
            rounds_cap=cfg.max_compaction_rounds,
            exhausted=exhausted,
            aborted=aborted,
            forced=force,
            cooldown_seconds_left=self.breaker.seconds_left() if uses_model else 0.0,
        )
        conclude(result, items, settings, end)

    async def _prune(
        self, session_id: str, result: CompactionResult, settings: WindowSettings
    ) -> None:
        pruned = await self.pruner.prune(session_id, settings=settings)
        if not pruned.pruned_count:
            return
        result.pruned_tool_outputs = pruned.pruned_count
        result.pruned_tokens = pruned.pruned_tokens
        self.bus.publish(
            MnesisEvent.PRUNE_COMPLETED,
            {
                "session_id": session_id,
                "pruned_count": pruned.pruned_count,
                "pruned_tokens": pruned.pruned_tokens,
            },
        )
