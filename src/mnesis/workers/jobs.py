"""What a worker does for each job: compact one session, or check integrity.

A compaction job (``CompactionJob`` of the specification: ``session_id``, ``reason``
``threshold | manual | maintenance``, ``requested_at``) takes the session's compaction
lock, recomputes the context pressure, and runs the engine (leaf then condensed passes,
one transaction per commit). A session already under its soft threshold is a no-op
(unless ``reason`` is ``manual``). A session another compactor holds raises the
retryable :class:`~mnesis.errors.CompactionLockedError`, and the queue retries the job
with backoff. An integrity job (``scan`` / ``scan_and_plan``) only reads: it never
repairs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from mnesis.compaction.engine import CompactionEngine
from mnesis.compaction.summariser import Summariser
from mnesis.config import MnesisConfig
from mnesis.errors import CompactionError, InvalidArgumentError
from mnesis.events.bus import EventBus
from mnesis.integrity.checker import IntegrityChecker
from mnesis.integrity.repair import plan_repairs
from mnesis.models.model_info import ModelInfo
from mnesis.store.base import SessionRecord
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator
from mnesis.workers.metrics import WorkerMetrics

__all__ = ["JobRunner", "WorkerOptions"]

logger = logging.getLogger("mnesis.workers")

REASONS = ("threshold", "manual", "maintenance")
MODES = ("scan", "scan_and_plan")


@dataclass
class WorkerOptions:
    """How a worker runs its jobs.

    ``summarisers`` replaces the compaction ladder built from each session's config
    (tests and offline deployments); ``config`` is used for sessions stored without one.
    """

    config: MnesisConfig = field(default_factory=MnesisConfig)
    summarisers: Callable[[], list[Summariser]] | None = None


class JobRunner:
    """Runs job bodies against one store (shared by the jobs of a worker process)."""

    def __init__(
        self, store: ImmutableStore, options: WorkerOptions, metrics: WorkerMetrics | None
    ) -> None:
        self.store = store
        self.options = options
        self.metrics = metrics

    def _config(self, record: SessionRecord) -> MnesisConfig:
        if not record.config:
            return self.options.config
        return MnesisConfig(**{**record.config, "store": self.options.config.store})

    async def compact(self, session_id: str, reason: str, compaction_id: str) -> dict[str, Any]:
        """Compact ``session_id`` if it is over its soft threshold (always for ``manual``)."""
        if reason not in REASONS:
            raise InvalidArgumentError(f"reason must be one of {REASONS}, not {reason!r}")
        started = time.perf_counter()
        record = await self.store.get_session(session_id)
        config = self._config(record)
        model = ModelInfo.from_model_string(record.model, config.model_overrides)
        estimator = TokenEstimator(model.encoding)
        engine = CompactionEngine(
            self.store,
            SummaryDAGStore(self.store),
            estimator,
            EventBus(),
            config,
            session_model=record.model,
        )
        if self.options.summarisers is not None:
            engine.summarisers = self.options.summarisers()
        system = estimator.estimate(record.system_prompt) + MESSAGE_OVERHEAD_TOKENS
        before = await self.store.context_token_total(session_id)
        fields: dict[str, Any] = {
            "session_id": session_id,
            "compaction_id": compaction_id,
            "trigger_reason": reason,
            "token_before": before,
        }
        if reason != "manual" and not engine.above_soft_threshold(before + system, model):
            fields.update(summary_id=None, token_after=before, outcome="noop")
            self._log("compaction skipped: under threshold", fields, started)
            return fields
        result = await engine.run_compaction(
            session_id, force=reason == "manual", raise_conflict=True
        )
        if result.error:
            raise CompactionError(f"compaction of {session_id} failed: {result.error}")
        outcome = "committed" if result.level_used or result.pruned_tool_outputs else "noop"
        fields.update(
            summary_id=result.summary_id,
            token_after=result.tokens_after,
            rounds=result.rounds,
            level_used=result.level_used,
            outcome=outcome,
        )
        self._log("compaction finished", fields, started)
        return fields

    async def integrity(
        self, session_id: str | None, mode: Literal["scan", "scan_and_plan"] | str
    ) -> dict[str, Any]:
        """Check one session (or all): violations by kind, and a repair plan if asked."""
        if mode not in MODES:
            raise InvalidArgumentError(f"mode must be one of {MODES}, not {mode!r}")
        started = time.perf_counter()
        report = await IntegrityChecker(self.store).run(session_id)
        fields: dict[str, Any] = {
            "session_id": session_id,
            "mode": mode,
            "sessions_checked": report.sessions_checked,
            "violations": report.by_kind(),
        }
        if mode == "scan_and_plan":
            plan = plan_repairs(report)
            fields["repair_actions"] = len(plan.actions)
            fields["unrepairable"] = len(plan.unrepairable)
        if self.metrics is not None:
            self.metrics.integrity(report)
        self._log("integrity scan finished", fields, started)
        return fields

    def _log(self, message: str, fields: dict[str, Any], started: float) -> None:
        fields["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        if self.metrics is not None and "outcome" in fields:
            self.metrics.compaction(fields["outcome"], fields["elapsed_ms"] / 1000)
        logger.info(message, extra={"mnesis": fields})
