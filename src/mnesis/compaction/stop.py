"""Why a compaction run stopped: the stop reason of a :class:`CompactionResult`, decided
once from what the run saw at its end, with the numbers a caller needs (how far above
the target, how large the protected tail), and written to the log."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mnesis.compaction.planner import tail_start
from mnesis.models.message import CompactionResult, CompactionStopReason
from mnesis.models.window import WindowSettings
from mnesis.store.base import ContextItem

__all__ = ["RunEnd", "conclude", "protected_tail_tokens", "stop_without_running"]

logger = logging.getLogger("mnesis.compaction")


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How a run's round loop ended."""

    target: int
    soft_limit: float
    """The soft threshold: a context under it does not trigger another run."""
    rounds_cap: int
    exhausted: bool
    """Every allowed round committed something (the cap, not the work, ended it)."""
    aborted: bool
    forced: bool
    cooldown_seconds_left: float
    """Seconds of model cooldown left (0: the model was available or not used)."""


def protected_tail_tokens(items: Sequence[ContextItem], settings: WindowSettings) -> int:
    """Tokens of the fresh tail a leaf pass may not touch."""
    start = tail_start(items, settings.fresh_tail_count, settings.fresh_tail_tokens)
    return sum(i.tokens for i in items if i.position >= start)


def conclude(
    result: CompactionResult,
    items: Sequence[ContextItem],
    settings: WindowSettings,
    end: RunEnd,
) -> CompactionResult:
    """Set ``result``'s stop reason from the context ``items`` the run left."""
    total = sum(i.tokens for i in items)
    tail = protected_tail_tokens(items, settings)
    result.target_tokens = end.target
    result.tokens_left = max(0, total - end.target)
    result.protected_tail_tokens = tail
    wrote = bool(result.rounds or result.pruned_tool_outputs)
    reason: CompactionStopReason
    if end.aborted:
        reason, detail = "aborted", f"aborted with {total:,} tokens in context"
    elif total <= end.target:
        reason = "done" if wrote else "nothing_to_do"
        detail = (
            f"context {result.tokens_before:,} → {total:,} tokens (target {end.target:,})"
            if wrote
            else f"context {total:,} tokens, already under the {end.target:,}-token target"
        )
    elif end.cooldown_seconds_left > 0:
        reason = "model_cooldown"
        detail = (
            f"{result.tokens_left:,} tokens above the {end.target:,}-token target; the "
            f"compaction model is in cooldown for {end.cooldown_seconds_left:.0f}s more"
        )
    elif end.exhausted:
        reason = "round_cap"
        detail = (
            f"round cap ({end.rounds_cap}) reached with {result.tokens_left:,} tokens above "
            f"the {end.target:,}-token target"
        )
    elif total <= end.soft_limit and tail <= end.target and not end.forced and wrote:
        reason = "done"
        detail = (
            f"context {result.tokens_before:,} → {total:,} tokens, under the soft threshold "
            f"({end.soft_limit:,.0f}); {result.tokens_left:,} above the {end.target:,}-token "
            "target, no span outside the fresh tail worth another summary"
        )
    elif end.forced and not wrote and total <= tail:
        reason = "nothing_to_do"
        detail = f"everything in context ({total:,} tokens) is the protected fresh tail"
    else:
        reason = "irreducible"
        detail = (
            f"{total:,} tokens left against a {end.target:,}-token target: the protected "
            f"fresh tail alone holds {tail:,} tokens"
            if tail > end.target
            else f"{total:,} tokens left against a {end.target:,}-token target: no span "
            f"outside the {tail:,}-token fresh tail is worth another summary"
        )
    result.stop_reason = reason
    result.stop_detail = detail
    log = logger.info if reason in ("done", "nothing_to_do") else logger.warning
    log("compaction of %s stopped: %s (%s)", result.session_id, reason, detail)
    return result


def stop_without_running(
    result: CompactionResult, reason: CompactionStopReason, detail: str
) -> CompactionResult:
    """Set a stop reason for a run that did not get to its rounds (lock held, failure)."""
    result.stop_reason = reason
    result.stop_detail = detail
    logger.warning("compaction of %s stopped: %s (%s)", result.session_id, reason, detail)
    return result
