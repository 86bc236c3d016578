"""``CompactionEngine``: prune → leaf summaries → condensed summaries, in rounds.

Guarantees:

* :meth:`CompactionEngine.run_compaction` never raises for model or store
  failures: it publishes ``COMPACTION_FAILED`` and returns a result.
* Each round commits atomically (summary, lineage, context swap, marker).
* Condensation is depth-aware (``planner.plan_condense``): a round first merges
  ``condense_fan_in`` adjacent summaries of one depth if there are that many,
  then summarises a leaf span if the context is above the drain target; shorter
  merges happen only while the context stays above the soft threshold.
* Level 3 never calls a model, so a round always has a candidate.
* Thresholds compare the size of the current context view (the sum of the
  ``context_items`` estimates), never lifetime token totals.
* A run drains the context to half the soft threshold, so compactions are rare
  and the context only grows at its end between them (prompt caches keep hitting).
* Cost is bounded: after ``max_consecutive_model_failures`` failed model levels
  the engine stops calling the model for ``failure_cooldown_seconds`` (Level 3
  only), a run makes at most ``max_compaction_rounds`` rounds of at most three
  ladder climbs (two model calls each), and a trigger that found nothing to do is not repeated until
  the context has grown.

Concurrency: one run at a time per engine (an asyncio lock), and one per
session across engines and processes (the store's compaction lock: a lease row
on SQLite, an advisory lock on PostgreSQL). A commit
also re-checks that the context items it replaces are unchanged.

The pieces live beside it: the rounds of a run (``rounds``) and its passes
(``passes``), the compaction model and its ladder of summarisers (``model_calls``,
``ladder``, ``summariser``), the cost guard (``breaker``), the lease (``lease``), the
background task (``scheduler``), span planning (``planner``) and the commit
(``commit``). The engine takes the locks, publishes the events and keeps the result.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mnesis.compaction.breaker import CircuitBreaker
from mnesis.compaction.commit import SummaryWriter
from mnesis.compaction.lease import CompactionLease
from mnesis.compaction.model_calls import CompactionModel
from mnesis.compaction.passes import CompactionPasses
from mnesis.compaction.planner import CONDENSE_FAN_IN
from mnesis.compaction.pruner import ToolOutputPruner
from mnesis.compaction.rounds import CompactionRounds
from mnesis.compaction.scheduler import CompactionScheduler
from mnesis.compaction.stop import stop_without_running
from mnesis.compaction.summariser import Summariser
from mnesis.config import MnesisConfig
from mnesis.context.builder import ContextBudget
from mnesis.errors import CompactionError, CompactionLockedError
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.llm import LLMClient
from mnesis.models.ids import new_id
from mnesis.models.message import CompactionResult
from mnesis.models.model_info import ModelInfo
from mnesis.models.tokens import TokenUsage
from mnesis.models.window import WindowSettings
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["CompactionEngine", "CompactionTruncatedError"]

logger = logging.getLogger("mnesis.compaction")


class CompactionEngine:
    """Orchestrates compaction of one session's context.

    ``summarisers``, when set, replaces the ladder built from the configured
    compaction model (Level 1, Level 2, Level 3): any :class:`Summariser` rungs,
    tried in order. If every rung escalates, deterministic Level 3 runs.
    """

    def __init__(
        self,
        store: ImmutableStore,
        dag_store: SummaryDAGStore,
        token_estimator: TokenEstimator,
        event_bus: EventBus,
        config: MnesisConfig,
        id_generator: Any = None,
        session_model: str | None = None,
        model_info: ModelInfo | None = None,
        context_measure: Callable[[str], Awaitable[int]] | None = None,
        *,
        llm: LLMClient | None = None,
        on_commit: Callable[[], None] | None = None,
    ) -> None:
        """``model_info`` and ``context_measure`` are accepted for 0.4.0's code and kept
        (as :attr:`model_info`, :meth:`set_context_measure`); the engine measures the
        context view itself."""
        self.store = store
        self.dag_store = dag_store
        self.estimator = token_estimator
        self.bus = event_bus
        self.config = config
        self._id = id_generator or new_id
        self._on_commit = on_commit
        self._lock: asyncio.Lock | None = None
        self._lease = CompactionLease(store)
        self._scheduler = CompactionScheduler()
        self._model = CompactionModel(config, session_model or "fake/default", llm)
        cfg = config.compaction
        self._breaker = CircuitBreaker(
            cfg.max_consecutive_model_failures, cfg.failure_cooldown_seconds
        )
        writer = SummaryWriter(store, token_estimator, self._id)
        self._rounds = CompactionRounds(
            store,
            config,
            event_bus,
            ToolOutputPruner(store, token_estimator, config),
            CompactionPasses(store, token_estimator, config, writer, self._breaker),
            self._breaker,
        )
        self.summarisers: list[Summariser] | None = None
        """Replaces the ladder of the compaction model when set (see the class)."""
        self.condense_fan_in = CONDENSE_FAN_IN
        """Same-depth summaries one condensed summary merges (see ``planner``)."""
        self.last_result: CompactionResult | None = None
        self.model_info = model_info
        self._context_measure = context_measure

    # -- thresholds -----------------------------------------------------------
    def _budget(self, model: ModelInfo) -> ContextBudget:
        return ContextBudget.compute(model, self.config)

    def settings(self, model: ModelInfo) -> WindowSettings:
        """The compaction settings in force for ``model``'s window (explicit ones win)."""
        return WindowSettings.derive(model.context_limit, self.config.compaction)

    @staticmethod
    def _tokens(tokens: int | TokenUsage) -> int:
        return tokens.effective_total() if isinstance(tokens, TokenUsage) else int(tokens)

    def is_soft_overflow(self, tokens: int | TokenUsage, model: ModelInfo) -> bool:
        """True if the context is above ``soft_threshold_fraction`` of the usable budget.

        Always False with ``compaction.auto=False``: nothing triggers on its own then."""
        return self.config.compaction.auto and self.above_soft_threshold(tokens, model)

    def above_soft_threshold(self, tokens: int | TokenUsage, model: ModelInfo) -> bool:
        """True if the context is above the soft threshold, whatever ``compaction.auto``
        says (for callers asked to compact explicitly, such as a worker's job)."""
        usable = self._budget(model).usable
        return self._tokens(tokens) > self.settings(model).soft_limit(usable)

    def is_hard_overflow(self, tokens: int | TokenUsage, model: ModelInfo) -> bool:
        """True if the context does not fit the usable budget."""
        return self._tokens(tokens) > self._budget(model).usable

    def is_overflow(self, tokens: int | TokenUsage, model: ModelInfo) -> bool:
        """Alias of :meth:`is_soft_overflow` (so also False with ``compaction.auto=False``)."""
        return self.is_soft_overflow(tokens, model)

    @property
    def in_progress(self) -> bool:
        """True while a background compaction task runs."""
        return self._scheduler.in_progress

    # -- triggering -----------------------------------------------------------
    def check_and_trigger(
        self,
        session_id: str,
        tokens: int | TokenUsage,
        model: ModelInfo,
        abort: asyncio.Event | None = None,
        force: bool = False,
        full_drain: bool = False,
    ) -> bool:
        """Start a background compaction if over the soft threshold (or, with ``force``,
        anyway). Never blocks. ``full_drain`` is accepted for 0.4.0's code: every run
        drains to half the soft threshold."""
        cfg = self.config.compaction
        if not cfg.auto or self.in_progress:
            return False
        size = self._tokens(tokens)
        if not force and not self.is_soft_overflow(size, model):
            return False
        if not self._scheduler.may_start(size, cfg.min_seconds_between_compactions):
            return False
        self.bus.publish(
            MnesisEvent.COMPACTION_TRIGGERED,
            {"session_id": session_id, "tokens": size, "reason": "soft_threshold"},
        )
        self._scheduler.start(lambda: self.run_compaction(session_id, abort, _triggered=True), size)
        return True

    async def wait_for_pending(self) -> None:
        """Wait for the background compaction (if any) to finish."""
        await self._scheduler.wait()

    async def cancel_pending(self) -> None:
        """Abort the background compaction; committed rounds stay, the rest is dropped."""
        await self._scheduler.cancel()

    # -- the run --------------------------------------------------------------
    async def run_compaction(
        self,
        session_id: str,
        abort: asyncio.Event | None = None,
        model_override: str | None = None,
        until_under_hard: bool = False,
        *,
        force: bool = False,
        raise_conflict: bool = False,
        _triggered: bool = False,
    ) -> CompactionResult:
        """Run the full protocol now. Never raises for model or store failures; with
        ``raise_conflict`` a session another compactor holds raises
        :class:`~mnesis.errors.CompactionLockedError` (retryable) instead of returning.
        ``until_under_hard`` (0.4.0's) always holds: a run drains below half the soft
        threshold, within ``max_compaction_rounds``."""
        started = time.perf_counter()
        result = CompactionResult(session_id=session_id)
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not _triggered:
                self.bus.publish(
                    MnesisEvent.COMPACTION_TRIGGERED,
                    {"session_id": session_id, "reason": "manual" if force else "hard_threshold"},
                )
            try:
                ttl = self.config.compaction.model_timeout_seconds * 3 + 60
                async with self._lease.hold(session_id, ttl):
                    await self._run_rounds(session_id, result, abort, model_override, force)
                return self._done(result, started)
            except CompactionLockedError as exc:
                if raise_conflict:
                    raise
                result.error = str(exc)
                stop_without_running(result, "lock_held", str(exc))
                return self._done(result, started, publish=False)
            except Exception as exc:
                logger.exception("compaction of %s failed", session_id)
                result.error = f"{type(exc).__name__}: {exc}"
                stop_without_running(result, "failed", result.error)
                result.elapsed_ms = (time.perf_counter() - started) * 1000
                self.last_result = result
                self.bus.publish(
                    MnesisEvent.COMPACTION_FAILED,
                    {**result.model_dump(), "result": result.model_dump()},
                )
                return result
            finally:
                self._scheduler.finished()

    def _done(
        self, result: CompactionResult, started: float, *, publish: bool = True
    ) -> CompactionResult:
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        self.last_result = result
        if (result.level_used or result.pruned_tool_outputs) and self._on_commit is not None:
            self._on_commit()
        if publish:
            self.bus.publish(
                MnesisEvent.COMPACTION_COMPLETED,
                {**result.model_dump(), "result": result.model_dump()},
            )
        return result

    async def _run_rounds(
        self,
        session_id: str,
        result: CompactionResult,
        abort: asyncio.Event | None,
        model_override: str | None,
        force: bool,
    ) -> None:
        cfg = self.config.compaction
        model = ModelInfo.from_model_string(self.session_model, self.config.model_overrides)
        self._breaker.max_failures = cfg.max_consecutive_model_failures
        self._breaker.cooldown_seconds = cfg.failure_cooldown_seconds
        if self.summarisers is not None:
            ladder = list(self.summarisers)
        else:
            ladder = self._model.ladder(model_override)
        await self._rounds.run(
            session_id,
            result,
            ladder,
            self._budget(model),
            self.settings(model),
            abort=abort,
            force=force,
            fan_in=self.condense_fan_in,
        )

    # -- the compaction model ---------------------------------------------------
    @property
    def session_model(self) -> str:
        """The session's model (the compaction model unless one is configured)."""
        return self._model.session_model

    @property
    def model_calls(self) -> int:
        """Compaction model calls this engine made."""
        return self._model.calls

    def summariser_window(self, model: str) -> int:
        """The window of compaction ``model``: ``compaction_context_limit`` if set, else the
        session's (``model_overrides`` included) for the session's model, else the table's."""
        return self._model.window(model)

    # -- 0.4.0's names (issue 31) ---------------------------------------------
    async def compact_exclusive(
        self, session_id: str, abort: asyncio.Event | None = None
    ) -> CompactionResult:
        """Compact now, as an explicit request, holding the session's compaction lock:
        raises :class:`~mnesis.errors.CompactionLockedError` when another task or
        process holds it (instead of returning a result naming the conflict)."""
        return await self.run_compaction(session_id, abort, force=True, raise_conflict=True)

    @property
    def has_pending(self) -> bool:
        """True while a background compaction is scheduled or running."""
        return self.in_progress

    @property
    def in_flight(self) -> bool:
        """True while a background compaction is scheduled or running."""
        return self.in_progress

    @property
    def more_to_compact(self) -> bool:
        """True when the last run stopped at ``max_compaction_rounds`` (more may remain)."""
        result = self.last_result
        return result is not None and result.rounds >= self.config.compaction.max_compaction_rounds

    @property
    def stalled(self) -> bool:
        """True while model summaries are paused after repeated failures (the engine
        then writes Level 3 summaries only)."""
        return not self._breaker.available()

    def note_user_turn(self) -> None:
        """Kept for 0.4.0's callers; does nothing: the engine paces itself by the size of
        the context view, not by turns."""

    def set_context_measure(self, measure: Callable[[str], Awaitable[int]] | None) -> None:
        """Keep ``measure`` (0.4.0's hook); the engine measures the context view itself."""
        self._context_measure = measure


class CompactionTruncatedError(CompactionError):
    """0.4.0's error for a compaction cut short. Never raised here: a run that stops at
    ``max_compaction_rounds`` returns its result (see :attr:`CompactionEngine.more_to_compact`)."""
