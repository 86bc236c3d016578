"""``CompactionEngine``: prune → leaf summaries → condensed summaries, in rounds.

Guarantees:

* :meth:`CompactionEngine.run_compaction` never raises for model or store
  failures: it publishes ``COMPACTION_FAILED`` and returns a result.
* Each round commits atomically (summary, lineage, context swap, marker).
* Level 3 never calls a model, so a round always has a candidate.
* Thresholds compare the size of the current context view (the sum of the
  ``context_items`` estimates), never lifetime token totals.
* A run drains the context to half the soft threshold, so compactions are rare
  and the context only grows at its end between them (prompt caches keep hitting).
* Cost is bounded: after ``max_consecutive_model_failures`` failed model levels
  the engine stops calling the model for ``failure_cooldown_seconds`` (Level 3
  only), a run makes at most ``max_compaction_rounds`` rounds of at most two
  model calls each, and a trigger that found nothing to do is not repeated until
  the context has grown.

Concurrency: one run at a time per engine (an asyncio lock), and one per
session across engines and processes (a lease row in the database). A commit
also re-checks that the context items it replaces are unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from mnesis.compaction.levels import (
    SummaryCandidate,
    condense_level1,
    condense_level2,
    condense_level3,
    extractive_candidate,
    level1_summarise,
    level2_summarise,
    level3_deterministic,
)
from mnesis.compaction.pruner import ToolOutputPruner
from mnesis.config import MnesisConfig
from mnesis.context.builder import ContextBudget
from mnesis.errors import CompactionLockedError
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.llm import LLMClient, LLMRequest, complete, resolve_client
from mnesis.models.ids import new_id
from mnesis.models.message import CompactionResult, Message, MessageWithParts
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import CompactionPart, MessagePart, TextPart
from mnesis.models.render import render_summary
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import (
    CompactionCommit,
    ContextItem,
    NewMessage,
    SummaryRecord,
)
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["CompactionEngine"]

logger = logging.getLogger("mnesis.compaction")

_DRAIN_FRACTION = 0.5
"""A run stops once the context is below this share of the soft threshold."""
_LEAF_CHUNK_TOKENS = 12_000
_MAX_CONDENSE_CHILDREN = 8
_EXTRACTIVE_WINDOW = 64_000


def _now_ms() -> int:
    return int(time.time() * 1000)


def _owner_is_dead(owner: str) -> bool:
    """True when a lease owner (``host:pid:run``) is a process of this host that is gone."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


class CompactionEngine:
    """Orchestrates compaction of one session's context."""

    def __init__(
        self,
        store: ImmutableStore,
        dag_store: SummaryDAGStore,
        token_estimator: TokenEstimator,
        event_bus: EventBus,
        config: MnesisConfig,
        id_generator: Any = None,
        session_model: str | None = None,
        *,
        llm: LLMClient | None = None,
        on_commit: Callable[[], None] | None = None,
    ) -> None:
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
        self._pending_task: asyncio.Task[CompactionResult] | None = None
        self._lock: asyncio.Lock | None = None
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{new_id('run')}"
        self._consecutive_failures = 0
        self._cooldown_until = 0.0
        self._noop_at_tokens: int | None = None
        self._last_finished: float | None = None
        self.model_calls = 0
        self.last_result: CompactionResult | None = None

    # -- thresholds -----------------------------------------------------------
    def _budget(self, model: ModelInfo) -> ContextBudget:
        return ContextBudget.compute(model, self.config)

    @staticmethod
    def _tokens(tokens: int | TokenUsage) -> int:
        return tokens.effective_total() if isinstance(tokens, TokenUsage) else int(tokens)

    def is_soft_overflow(self, tokens: int | TokenUsage, model: ModelInfo) -> bool:
        """True if the context is above ``soft_threshold_fraction`` of the usable budget."""
        usable = self._budget(model).usable
        return self._tokens(tokens) > usable * self.config.compaction.soft_threshold_fraction

    def is_hard_overflow(self, tokens: int | TokenUsage, model: ModelInfo) -> bool:
        """True if the context does not fit the usable budget."""
        return self._tokens(tokens) > self._budget(model).usable

    def is_overflow(self, tokens: int | TokenUsage, model: ModelInfo) -> bool:
        """Alias of :meth:`is_soft_overflow`."""
        return self.is_soft_overflow(tokens, model)

    @property
    def in_progress(self) -> bool:
        """True while a background compaction task runs."""
        task = self._pending_task
        return task is not None and not task.done()

    # -- triggering -----------------------------------------------------------
    def check_and_trigger(
        self,
        session_id: str,
        tokens: int | TokenUsage,
        model: ModelInfo,
        abort: asyncio.Event | None = None,
    ) -> bool:
        """Start a background compaction if over the soft threshold. Never blocks."""
        if not self.config.compaction.auto or self.in_progress:
            return False
        size = self._tokens(tokens)
        if not self.is_soft_overflow(size, model):
            return False
        if self._noop_at_tokens is not None and size <= self._noop_at_tokens:
            return False
        gap = self.config.compaction.min_seconds_between_compactions
        finished = self._last_finished
        if gap and finished is not None and time.monotonic() - finished < gap:
            return False
        self.bus.publish(
            MnesisEvent.COMPACTION_TRIGGERED,
            {"session_id": session_id, "tokens": size, "reason": "soft_threshold"},
        )
        self._pending_task = asyncio.get_running_loop().create_task(
            self._background(session_id, size, abort)
        )
        return True

    async def _background(
        self, session_id: str, size: int, abort: asyncio.Event | None
    ) -> CompactionResult:
        result = await self.run_compaction(session_id, abort, _triggered=True)
        self._noop_at_tokens = size if result.level_used == 0 else None
        return result

    async def wait_for_pending(self) -> None:
        """Wait for the background compaction (if any) to finish."""
        task = self._pending_task
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
            self._pending_task = None

    async def cancel_pending(self) -> None:
        """Abort the background compaction; committed rounds stay, the rest is dropped."""
        task = self._pending_task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._pending_task = None

    # -- the run --------------------------------------------------------------
    async def run_compaction(
        self,
        session_id: str,
        abort: asyncio.Event | None = None,
        model_override: str | None = None,
        *,
        force: bool = False,
        _triggered: bool = False,
    ) -> CompactionResult:
        """Run the full protocol now. Never raises for model or store failures."""
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
            locked = False
            try:
                ttl = self.config.compaction.model_timeout_seconds * 3 + 60
                locked = await self.store.acquire_compaction_lock(session_id, self._owner, ttl)
                if not locked:
                    holder = await self.store.compaction_lock_owner(session_id)
                    if holder is not None and _owner_is_dead(holder):
                        logger.warning("taking over the compaction lease of dead %s", holder)
                        locked = await self.store.acquire_compaction_lock(
                            session_id, self._owner, ttl, steal_from=holder
                        )
                if not locked:
                    result.error = "another compactor holds this session's lock"
                    return self._done(result, started, publish=False)
                await self._run_rounds(session_id, result, abort, model_override, force)
                return self._done(result, started)
            except CompactionLockedError as exc:
                result.error = str(exc)
                return self._done(result, started, publish=False)
            except Exception as exc:
                logger.exception("compaction of %s failed", session_id)
                result.error = f"{type(exc).__name__}: {exc}"
                result.elapsed_ms = (time.perf_counter() - started) * 1000
                self.last_result = result
                self.bus.publish(
                    MnesisEvent.COMPACTION_FAILED,
                    {
                        "session_id": session_id,
                        "error": result.error,
                        "result": result.model_dump(),
                    },
                )
                return result
            finally:
                if locked:
                    with contextlib.suppress(Exception):
                        await self.store.release_compaction_lock(session_id, self._owner)
                self._last_finished = time.monotonic()

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
                {"session_id": result.session_id, "result": result.model_dump()},
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
        target = int(budget.usable * cfg.soft_threshold_fraction * _DRAIN_FRACTION)
        items = await self.store.get_context_items(session_id)
        result.tokens_before = sum(i.tokens for i in items)
        if cfg.prune:
            pruned = await self._pruner.prune(session_id)
            if pruned.pruned_count:
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
        for round_index in range(cfg.max_compaction_rounds):
            if abort is not None and abort.is_set():
                break
            items = await self.store.get_context_items(session_id)
            total = sum(i.tokens for i in items)
            if total <= target and not (force and round_index == 0):
                break
            rounds_left = cfg.max_compaction_rounds - round_index
            progressed = await self._leaf_pass(
                session_id, items, total - target, rounds_left, budget, result, model_override
            )
            if not progressed and cfg.condensation_enabled:
                progressed = await self._condense_pass(session_id, items, result, model_override)
            if not progressed:
                break
            result.rounds += 1
        result.tokens_after = await self.store.context_token_total(session_id)

    # -- leaf pass --------------------------------------------------------------
    def _tail_start(self, items: Sequence[ContextItem]) -> int:
        """First position of the protected fresh tail."""
        messages = [i for i in items if i.item_type == "message"]
        if not messages:
            return 1 << 62
        users = [i.position for i in messages if i.role == "user"]
        start = users[-2] if len(users) >= 2 else (users[0] if users else messages[0].position)
        fresh = self.config.compaction.fresh_tail_count
        if fresh:
            start = min(start, messages[max(0, len(messages) - fresh)].position)
        return start

    def _leaf_span(self, items: Sequence[ContextItem], want_tokens: int) -> list[ContextItem]:
        tail = self._tail_start(items)
        span: list[ContextItem] = []
        used = 0
        for item in items:
            if item.position >= tail:
                break
            if item.item_type == "summary":
                if span:
                    break
                continue
            if span and used + item.tokens > want_tokens and item.role != "tool":
                break
            span.append(item)
            used += item.tokens
        return span

    async def _leaf_pass(
        self,
        session_id: str,
        items: list[ContextItem],
        excess: int,
        rounds_left: int,
        budget: ContextBudget,
        result: CompactionResult,
        model_override: str | None,
    ) -> bool:
        cfg = self.config.compaction
        model = model_override or cfg.compaction_model or self.session_model
        input_cap = int(self._model_window(model) * 0.75)
        want = min(input_cap, max(_LEAF_CHUNK_TOKENS, -(-max(excess, 0) // max(1, rounds_left))))
        span = self._leaf_span(items, want)
        span_tokens = sum(i.tokens for i in span)
        if not span or span_tokens <= cfg.leaf_target_tokens * 1.2:
            return False
        messages = await self.store.get_messages_by_ids([i.item_id for i in span])
        if not messages:
            return False
        candidate = await self._summarise(messages, budget, model)
        covered = messages[: candidate.messages_covered]
        covered_ids = {m.id for m in covered}
        summary_id = self._id("sum")
        record = SummaryRecord(
            id=summary_id,
            session_id=session_id,
            kind="leaf",
            depth=0,
            level=candidate.compaction_level,
            content=candidate.text,
            token_count=candidate.token_count,
            file_ids=candidate.file_ids,
            span_start_message_id=covered[0].id,
            span_end_message_id=covered[-1].id,
            source_message_count=len(covered),
            created_at=_now_ms(),
        )
        result.summary_message_id = await self._commit(
            record,
            source_ids=[m.id for m in covered],
            parent_ids=[],
            replaced=[(i.position, i.item_id) for i in span if i.item_id in covered_ids],
        )
        result.level_used = max(result.level_used, candidate.compaction_level)
        result.compacted_message_count += len(covered)
        result.summary_id = summary_id
        result.summary_token_count = candidate.token_count
        return True

    def _model_window(self, model: str) -> int:
        if model == "extractive":
            # No model window, but bounded spans keep each pass cheap and each leaf
            # specific enough to be useful when expanded.
            return _EXTRACTIVE_WINDOW
        return ModelInfo.from_model_string(model, None).context_limit

    def _model_available(self) -> bool:
        return time.monotonic() >= self._cooldown_until

    def _record_model_outcome(self, ok: bool) -> None:
        if ok:
            self._consecutive_failures = 0
            return
        self._consecutive_failures += 1
        cfg = self.config.compaction
        if self._consecutive_failures >= cfg.max_consecutive_model_failures:
            self._cooldown_until = time.monotonic() + cfg.failure_cooldown_seconds
            self._consecutive_failures = 0
            logger.warning(
                "compaction model failed %d times in a row; using level 3 only for %.0fs",
                cfg.max_consecutive_model_failures,
                cfg.failure_cooldown_seconds,
            )

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

    async def _summarise(
        self, messages: list[MessageWithParts], budget: ContextBudget, model: str
    ) -> SummaryCandidate:
        cfg = self.config.compaction
        kwargs = {"target_tokens": cfg.leaf_target_tokens, "footer_cap": cfg.file_ids_footer_cap}
        if model == "extractive":
            return extractive_candidate(messages, budget, self.estimator, level=1, **kwargs)
        candidate: SummaryCandidate | None = None
        if self._model_available():
            window = self._model_window(model)
            candidate = await level1_summarise(
                messages,
                model,
                budget,
                self.estimator,
                self._llm_call,
                cfg.compaction_prompt,
                window,
                **kwargs,
            )
            if candidate is None and cfg.level2_enabled and self._model_available():
                candidate = await level2_summarise(
                    messages,
                    model,
                    budget,
                    self.estimator,
                    self._llm_call,
                    cfg.level2_prompt,
                    window,
                    **kwargs,
                )
            self._record_model_outcome(candidate is not None)
        if candidate is None:
            candidate = level3_deterministic(messages, budget, self.estimator, **kwargs)
        return candidate

    # -- condensed pass ---------------------------------------------------------
    async def _condense_pass(
        self,
        session_id: str,
        items: list[ContextItem],
        result: CompactionResult,
        model_override: str | None,
    ) -> bool:
        cfg = self.config.compaction
        run: list[ContextItem] = []
        for item in items:
            if item.item_type == "summary":
                run.append(item)
                if len(run) >= _MAX_CONDENSE_CHILDREN:
                    break
            elif len(run) >= 2:
                break
            else:
                run = []
        if len(run) < 2:
            return False
        children = await self.store.get_summaries([i.item_id for i in run])
        if len(children) != len(run):
            return False
        model = model_override or cfg.compaction_model or self.session_model
        target = cfg.condensed_target_tokens
        kwargs = {"target_tokens": target, "footer_cap": cfg.file_ids_footer_cap}
        candidate = None
        if model == "extractive":
            candidate = condense_level3(children, self.estimator, level=1, **kwargs)
        elif self._model_available():
            candidate = await condense_level1(
                children,
                model,
                self.estimator,
                self._llm_call,
                prompt=cfg.condense_prompt,
                **kwargs,
            )
            if candidate is None and cfg.level2_enabled and self._model_available():
                candidate = await condense_level2(
                    children,
                    model,
                    self.estimator,
                    self._llm_call,
                    prompt=cfg.condense_level2_prompt,
                    **kwargs,
                )
            self._record_model_outcome(candidate is not None)
        if candidate is None:
            candidate = condense_level3(children, self.estimator, **kwargs)
        if candidate.token_count >= sum(c.token_count for c in children):
            return False
        summary_id = self._id("sum")
        record = SummaryRecord(
            id=summary_id,
            session_id=session_id,
            kind="condensed",
            depth=max(c.depth for c in children) + 1,
            level=candidate.compaction_level,
            content=candidate.text,
            token_count=candidate.token_count,
            file_ids=candidate.file_ids,
            span_start_message_id=children[0].span_start_message_id,
            span_end_message_id=children[-1].span_end_message_id,
            source_message_count=sum(c.source_message_count for c in children),
            created_at=_now_ms(),
        )
        result.summary_message_id = await self._commit(
            record,
            source_ids=[],
            parent_ids=[c.id for c in children],
            replaced=[(i.position, i.item_id) for i in run],
        )
        result.level_used = max(result.level_used, candidate.compaction_level)
        result.condensed_count += 1
        result.summary_id = summary_id
        result.summary_token_count = candidate.token_count
        return True

    async def _commit(
        self,
        record: SummaryRecord,
        *,
        source_ids: list[str],
        parent_ids: list[str],
        replaced: list[tuple[int, str]],
    ) -> str:
        rendered = render_summary(
            record.id,
            record.kind,
            record.depth,
            record.source_message_count,
            record.span_start_message_id,
            record.span_end_message_id,
            record.content,
        )
        context_tokens = self.estimator.estimate(rendered) + MESSAGE_OVERHEAD_TOKENS
        parts: list[MessagePart] = [
            TextPart(text=record.content, synthetic=True),
            CompactionPart(
                summary_id=record.id,
                level=record.level,
                auto=True,
                compacted_message_count=record.source_message_count,
            ),
        ]
        marker = Message(
            id=self._id("msg"),
            session_id=record.session_id,
            role="assistant",
            created_at=_now_ms(),
            is_summary=True,
            token_estimate=context_tokens,
        )
        record.message_id = marker.id
        await self.store.commit_compaction(
            CompactionCommit(
                summary=record,
                source_message_ids=source_ids,
                parent_summary_ids=parent_ids,
                replaced=replaced,
                context_tokens=context_tokens,
                marker=NewMessage(marker, parts, [record.token_count, 0], in_context=False),
            )
        )
        return marker.id
