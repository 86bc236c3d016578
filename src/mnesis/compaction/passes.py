"""The two kinds of compaction round: a leaf pass (messages → a summary) and a condense
pass (adjacent summaries → one deeper summary), each climbing the summariser ladder.

:class:`~mnesis.compaction.rounds.CompactionRounds` decides which pass a round runs; a
pass plans its span (``planner``), summarises it (``ladder``) and commits it
(``commit``). Level 3 never calls a model, so a pass always has a candidate.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnesis.compaction.breaker import CircuitBreaker
from mnesis.compaction.candidates import INPUT_WINDOW_SHARE, SummaryCandidate, SummaryTarget
from mnesis.compaction.commit import SummaryWriter
from mnesis.compaction.ladder import climb
from mnesis.compaction.ledger import condensed_ledger, leaf_ledger
from mnesis.compaction.planner import leaf_span, plan_condense, plan_leaf_span
from mnesis.compaction.summariser import ExtractiveSummariser, Summariser
from mnesis.config import MnesisConfig
from mnesis.context.builder import ContextBudget
from mnesis.models.ledger import LossLedger
from mnesis.models.message import CompactionResult, MessageWithParts
from mnesis.models.window import WindowSettings
from mnesis.store.base import ContextItem, SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["CompactionPasses"]

_LAST_RESORT = ExtractiveSummariser(level=3)


@dataclass(frozen=True, slots=True)
class CompactionPasses:
    """Runs one leaf or condense pass of a session and records it in the run's result."""

    store: ImmutableStore
    estimator: TokenEstimator
    config: MnesisConfig
    writer: SummaryWriter
    breaker: CircuitBreaker
    leaf_counts: dict[str, int] = field(default_factory=dict)
    """Condensed summary ID → the leaf summaries under it (filled as they are asked for)."""

    async def leaf(
        self,
        session_id: str,
        items: list[ContextItem],
        excess: int,
        rounds_left: int,
        budget: ContextBudget,
        settings: WindowSettings,
        result: CompactionResult,
        ladder: Sequence[Summariser],
        manual: bool = False,
    ) -> bool:
        window = ladder[0].input_window if ladder else _LAST_RESORT.input_window
        if manual:
            # An explicit request under the threshold: everything before the fresh tail.
            tail = (settings.fresh_tail_count, settings.fresh_tail_tokens)
            span = leaf_span(items, int(window * INPUT_WINDOW_SHARE), *tail)
        else:
            span = plan_leaf_span(
                items, settings, excess=excess, rounds_left=rounds_left, input_window=window
            )
        if not span:
            return False
        messages = await self.store.get_messages_by_ids([i.item_id for i in span])
        if not messages:
            return False
        candidate = await self._summarise(messages, budget, settings, ladder)
        covered = messages[: candidate.messages_covered]
        covered_ids = {m.id for m in covered}
        replaced = [i for i in span if i.item_id in covered_ids]
        ledger = await asyncio.to_thread(
            leaf_ledger, covered, candidate.text, sum(i.tokens for i in replaced), 0
        )
        record = self.writer.leaf_record(session_id, candidate, covered)
        await self._commit(result, record, replaced, ledger, sources=[m.id for m in covered])
        result.compacted_message_count += len(covered)
        return True

    async def _summarise(
        self,
        messages: list[MessageWithParts],
        budget: ContextBudget,
        settings: WindowSettings,
        ladder: Sequence[Summariser],
    ) -> SummaryCandidate:
        cfg = self.config.compaction
        target = SummaryTarget(
            settings.leaf_target_tokens, cfg.file_ids_footer_cap, self.estimator, budget.usable
        )
        candidate = await climb(ladder, lambda rung: rung.summarise(messages, target), self.breaker)
        if candidate is None or not 0 < candidate.messages_covered <= len(messages):
            return _LAST_RESORT.summarise_now(messages, target)
        return candidate

    async def condense(
        self,
        session_id: str,
        items: list[ContextItem],
        result: CompactionResult,
        ladder: Sequence[Summariser],
        settings: WindowSettings,
        *,
        fan_in: int,
        pressure: bool = False,
    ) -> bool:
        cfg = self.config.compaction
        summary_ids = [i.item_id for i in items if i.item_type == "summary"]
        if len(summary_ids) < 2:
            return False
        records = await self.store.get_summaries(summary_ids)
        depths = {s.id: s.depth for s in records}
        leaves = {s.id: await self._leaves(s) for s in records} if pressure else None
        run = plan_condense(items, depths, fan_in=fan_in, pressure=pressure, leaves=leaves)
        if not run:
            return False
        children = await self.store.get_summaries([i.item_id for i in run])
        if len(children) != len(run):
            return False
        target = SummaryTarget(
            settings.condensed_target_tokens, cfg.file_ids_footer_cap, self.estimator
        )
        if cfg.condense_skip_level1:
            ladder = [r for r in ladder if not (r.uses_model and r.level == 1)]
        candidate = await climb(ladder, lambda rung: rung.condense(children, target), self.breaker)
        if candidate is None:
            candidate = _LAST_RESORT.condense_now(children, target)
        if candidate.token_count >= sum(c.token_count for c in children):
            return False
        ledger = await asyncio.to_thread(
            condensed_ledger, children, candidate.text, sum(i.tokens for i in run), 0
        )
        record = self.writer.condensed_record(session_id, candidate, children)
        await self._commit(result, record, run, ledger, parents=[c.id for c in children])
        self.leaf_counts[record.id] = sum([await self._leaves(c) for c in children])
        result.condensed_count += 1
        return True

    async def _commit(
        self,
        result: CompactionResult,
        record: SummaryRecord,
        replaced: Sequence[ContextItem],
        ledger: LossLedger,
        *,
        sources: Sequence[str] = (),
        parents: Sequence[str] = (),
    ) -> None:
        """Commit ``record`` in place of the context items ``replaced`` and note it in
        ``result`` (the run's last summary, the highest level it used)."""
        result.summary_message_id = await self.writer.commit(
            record,
            sources=list(sources),
            parents=list(parents),
            replaced=[(i.position, i.item_id) for i in replaced],
            ledger=ledger,
        )
        result.level_used = max(result.level_used, record.level)
        result.summary_id = record.id
        result.summary_token_count = record.token_count

    async def _leaves(self, summary: SummaryRecord) -> int:
        """How many leaf summaries ``summary`` covers (read through lineage once)."""
        if summary.kind == "leaf" or summary.depth == 0:
            return 1
        known = self.leaf_counts.get(summary.id)
        if known is not None:
            return known
        children = await self.store.get_summaries(
            await self.store.get_summary_parent_ids(summary.id)
        )
        count = sum([await self._leaves(c) for c in children]) or 1
        self.leaf_counts[summary.id] = count
        return count
