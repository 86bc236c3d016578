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

The pieces live beside it: the escalation ladder of summarisers (``ladder``,
``summariser``), the cost guard (``breaker``), the lease (``lease``), the
background task (``scheduler``), span planning (``planner``) and the commit
(``commit``). The engine sequences them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mnesis.compaction.breaker import CircuitBreaker
from mnesis.compaction.commit import SummaryWriter
from mnesis.compaction.ladder import EXTRACTIVE_MODEL, default_ladder
from mnesis.compaction.lease import CompactionLease
from mnesis.compaction.passes import CompactionPasses
from mnesis.compaction.planner import CONDENSE_FAN_IN, LEAF_CHUNK_TOKENS
from mnesis.compaction.pruner import ToolOutputPruner
from mnesis.compaction.scheduler import CompactionScheduler
from mnesis.compaction.stop import RunEnd, conclude, stop_without_running
from mnesis.compaction.summariser import EXTRACTIVE_WINDOW, Summariser
from mnesis.config import MnesisConfig
from mnesis.context.builder import ContextBudget
from mnesis.errors import CompactionError, CompactionLockedError
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.llm import LLMClient, LLMRequest, complete, resolve_client
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
        self.session_model = session_model or "fake/default"
        self._id = id_generator or new_id
        self._llm = llm
        self._on_commit = on_commit
        self._pruner = ToolOutputPruner(store, token_estimator, config)
        self._lock: asyncio.Lock | None = None
        self._lease = CompactionLease(store)
        self._scheduler = CompactionScheduler()
        self._writer = SummaryWriter(store, token_estimator, self._id)
        cfg = config.compaction
        self._breaker = CircuitBreaker(
            cfg.max_consecutive_model_failures, cfg.failure_cooldown_seconds
        )
        self._passes = CompactionPasses(store, token_estimator, config, self._writer, self._breaker)
        self.summarisers: list[Summariser] | None = None
        self.condense_fan_in = CONDENSE_FAN_IN
        """Same-depth summaries one condensed summary merges (see ``planner``)."""
        self.model_calls = 0
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
        budget = self._budget(model)
        settings = self.settings(model)
        target = settings.drain_target(budget.usable)
        # One leaf per triggered run: the chunk covers the gap from the soft threshold
        # down to the target (never more than the documented chunk).
        gap = int(settings.soft_limit(budget.usable)) - target
        chunk = min(LEAF_CHUNK_TOKENS, max(settings.leaf_chunk_tokens, gap))
        settings = dataclasses.replace(settings, leaf_chunk_tokens=chunk)
        self._breaker.max_failures = cfg.max_consecutive_model_failures
        self._breaker.cooldown_seconds = cfg.failure_cooldown_seconds
        ladder = self._ladder(model_override)
        items = await self.store.get_context_items(session_id)
        result.tokens_before = sum(i.tokens for i in items)
        if cfg.prune:
            await self._prune(session_id, result, settings)
        soft_limit = settings.soft_limit(budget.usable)
        exhausted = aborted = False
        for round_index in range(cfg.max_compaction_rounds):
            if abort is not None and abort.is_set():
                aborted = True
                break
            items = await self.store.get_context_items(session_id)
            total = sum(i.tokens for i in items)
            manual = force and total <= target
            over = total > target or manual
            progressed = False
            if cfg.condensation_enabled and not manual and (over or result.rounds):
                # A full carry first: keeps the DAG balanced whether or not room is needed.
                progressed = await self._passes.condense(
                    session_id, items, result, ladder, settings, fan_in=self.condense_fan_in
                )
            if not progressed and over:
                rounds_left = cfg.max_compaction_rounds - round_index
                progressed = await self._passes.leaf(
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
                if (
                    not progressed
                    and cfg.condensation_enabled
                    and not manual
                    and total > soft_limit
                ):
                    progressed = await self._passes.condense(
                        session_id,
                        items,
                        result,
                        ladder,
                        settings,
                        fan_in=self.condense_fan_in,
                        pressure=True,
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
            cooldown_seconds_left=self._breaker.seconds_left() if uses_model else 0.0,
        )
        conclude(result, items, settings, end)

    async def _prune(
        self, session_id: str, result: CompactionResult, settings: WindowSettings
    ) -> None:
        pruned = await self._pruner.prune(session_id, settings=settings)
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

    # -- the ladder -------------------------------------------------------------
    def _ladder(self, model_override: str | None) -> list[Summariser]:
        if self.summarisers is not None:
            return list(self.summarisers)
        cfg = self.config.compaction
        model = model_override or cfg.compaction_model or self.session_model
        return default_ladder(
            model, cfg, self._llm_call, input_window=self.summariser_window(model)
        )

    def summariser_window(self, model: str) -> int:
        """The window of compaction ``model``: ``compaction_context_limit`` if set, else the
        session's (``model_overrides`` included) for the session's model, else the table's."""
        explicit = self.config.compaction.compaction_context_limit
        if explicit is not None:
            return explicit
        if model == EXTRACTIVE_MODEL:
            return EXTRACTIVE_WINDOW
        overrides = self.config.model_overrides if model == self.session_model else None
        return ModelInfo.from_model_string(model, overrides).context_limit

    async def _llm_call(self, model: str, messages: list[dict[str, Any]], max_tokens: int) -> str:
        client = self._client_for(model)
        self.model_calls += 1
        response = await complete(
            client,
            LLMRequest(model=model, messages=messages, max_tokens=max_tokens, purpose="compaction"),
            timeout=self.config.compaction.model_timeout_seconds,
        )
        return response.text

    def _client_for(self, model: str) -> LLMClient:
        if self._llm is not None and model == self.session_model:
            return self._llm
        return resolve_client(model, None)

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
