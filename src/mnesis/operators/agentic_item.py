"""One item of an :class:`~mnesis.operators.AgenticMap` run: its durable attempt loop
and the multi-turn sub-session of each attempt.

Invariants:

* The item's row in ``map_items`` is claimed before every attempt and completed,
  failed or (on cancellation) released after it, so a resume knows exactly what
  is left. The prompt is rendered (in a thread, bounded) before the first claim; an
  input it cannot render fails alone, typed, and its row goes to ``failed``.
* Every failure of an attempt (model, tool loop, arithmetic, …) is caught, stored
  as ``"<error class>: <message>"`` and retried; only a failure of the store
  itself escapes, leaving the row ``running`` so a resume runs it again.
* A fresh item (or one retried explicitly) gets the whole attempt budget; one that
  an earlier process left unfinished gets what remains, but at least one
  attempt, so resuming always makes progress.
* Each attempt runs in a fresh sub-session that is closed (its background
  compaction aborted) when the attempt ends. Sub-agents never spawn sub-agents:
  ``lcm_expand_query`` is neither offered nor executed.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from mnesis.config import MnesisConfig
from mnesis.llm import LLMClient
from mnesis.models.parts import ToolPart
from mnesis.models.tokens import TokenUsage
from mnesis.operators.agentic_plan import AgentPlan
from mnesis.operators.errors import TemplateRenderError
from mnesis.operators.results import AgentMapResult
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.tools import LCM_TOOL_NAMES
from mnesis.session import MnesisSession
from mnesis.store.map_runs import ItemRow, MapRunStore
from mnesis.store.pool import StorePool

__all__ = ["ItemWorker", "stored_result"]

logger = logging.getLogger("mnesis.operators")

_CONTINUE = "The tool results are above. Continue, and give your final answer when done."
_RETRIEVAL_TOOLS = tuple(sorted(LCM_TOOL_NAMES - {"lcm_expand_query"}))
_STORED_TYPE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): ")


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a finished attempt produced; stored as the item's ``output`` JSON."""

    text: str
    turns: int
    finish_reason: str
    usage: TokenUsage
    intermediate: tuple[str, ...] = ()
    """The replies with text before the final one."""

    def encode(self) -> str:
        record = {
            "text": self.text,
            "turns": self.turns,
            "finish_reason": self.finish_reason,
            "usage": self.usage.model_dump(),
            "intermediate": list(self.intermediate),
        }
        return json.dumps(record, ensure_ascii=False)

    @staticmethod
    def decode(output: str | None) -> _Outcome:
        """The outcome a row stored; raises ``ValueError``, ``TypeError`` or
        ``AttributeError`` for an output that cannot be read back."""
        record = json.loads(output or "{}")
        usage = TokenUsage(**record.get("usage", {}))
        return _Outcome(
            record.get("text", ""),
            record.get("turns", 0),
            record.get("finish_reason", "stop"),
            usage,
            tuple(str(text) for text in record.get("intermediate", ())),
        )

    def result(self, **fields: Any) -> AgentMapResult:
        """The successful result of an item (``fields``: its identity and audit trail)."""
        return AgentMapResult(
            **fields,
            success=True,
            output_text=self.text,
            turns=self.turns,
            finish_reason=self.finish_reason,
            token_usage=self.usage,
            intermediate_outputs=list(self.intermediate),
        )


@dataclass(frozen=True, slots=True)
class ItemWorker:
    """Runs the items of one plan in sub-sessions on ``pool``, recording in ``runs``."""

    plan: AgentPlan
    runs: MapRunStore
    pool: StorePool
    client: LLMClient
    session_config: MnesisConfig

    async def run(self, row: ItemRow) -> AgentMapResult:
        """Attempt the item of ``row`` until it succeeds or its budget is spent."""
        plan, runs = self.plan, self.runs
        item = plan.inputs[row.idx]
        base = {"run_id": plan.run_id, "index": row.idx, "input": item}
        try:
            prompt = await plan.template.render_async(item, row.idx)
        except TemplateRenderError as exc:
            # Nothing was claimed: the row goes from pending straight to failed.
            error = _describe(exc)
            await runs.fail(plan.run_id, row.idx, error)
            return _failure(
                error, _name(exc), **base, attempts=row.attempts, session_id=row.session_id
            )
        if row.attempts == 0 or row.state == "failed":
            budget = plan.max_attempts
        else:
            budget = max(1, plan.max_attempts - row.attempts)
        error = row.error or ""
        error_type = _stored_type(error)
        attempts = row.attempts
        session_id = row.session_id
        for _ in range(budget):
            try:
                claimed = await runs.claim(plan.run_id, row.idx)
                if claimed is None:  # finished meanwhile (cannot happen within one process)
                    break
                attempts = claimed
                holder: list[str] = []
                try:
                    outcome = await self._attempt(row.idx, prompt, holder)
                except Exception as exc:
                    error, error_type = _describe(exc), _name(exc)
                    session_id = holder[0] if holder else session_id
                    logger.debug(
                        "agentic_map %s item %d attempt %d failed: %s",
                        plan.run_id,
                        row.idx,
                        attempts,
                        error,
                    )
                    await runs.note_error(plan.run_id, row.idx, error)
                    continue
                await runs.complete(plan.run_id, row.idx, outcome.encode(), holder[0])
            except asyncio.CancelledError:
                # Interrupted, not failed: put the item back for a later resume. The
                # store's single writer thread runs writes in order, so this lands
                # after a claim or completion that was still in flight, and a
                # completed item stays completed.
                with contextlib.suppress(Exception):
                    await asyncio.shield(runs.release(plan.run_id, row.idx))
                raise
            return outcome.result(**base, session_id=holder[0], attempts=attempts)
        await runs.fail(plan.run_id, row.idx, error)
        return _failure(error, error_type, **base, session_id=session_id, attempts=attempts)

    async def _attempt(self, index: int, prompt: str, holder: list[str]) -> _Outcome:
        """One sub-session: send ``prompt``, run the tools asked for, repeat until the
        model stops, loops or reaches ``max_turns``. The session ID goes to ``holder``
        as soon as it exists, so a failed attempt still names its session."""
        plan = self.plan
        session = await MnesisSession.create(
            model=plan.model,
            agent=plan.agent,
            parent_id=plan.parent_id,
            config=self.session_config,
            system_prompt=plan.system_prompt,
            pool=self.pool,
            llm=self.client,
        )
        holder.append(session.id)
        try:
            await self.runs.attach_session(plan.run_id, index, session.id)
            # Sub-agents never spawn sub-agents: an engine of their own session without
            # the expand_query hook makes the session refuse lcm_expand_query.
            session._wiring.tools.restrict(_retrieval_engine_without_expansion(session))
            offered = [*session.lcm_tool_definitions(exclude=("lcm_expand_query",)), *plan.tools]
            message = prompt
            usage = TokenUsage()
            turns = 0
            intermediate: list[str] = []
            while True:
                turns += 1
                result = await session.send(message, tools=offered, run_lcm_tools=True)
                usage = usage + result.tokens
                if result.doom_loop_detected:
                    reason = "doom_loop"
                    break
                if not result.tool_calls:
                    reason = "stop"
                    break
                if turns >= plan.max_turns:
                    reason = "max_turns"
                    break
                if result.text:
                    intermediate.append(result.text)
                for call in result.tool_calls:
                    output, error = await self._call_tool(session, call)
                    await session.complete_tool_call(call.tool_call_id, output=output, error=error)
                message = self.plan.continuation or _CONTINUE
            return _Outcome(result.text, turns, reason, usage, tuple(intermediate))
        finally:
            # The sub-session takes no more turns, so a compaction its last turn
            # started in the background would only cost model calls.
            await session.close(abort_compaction=True)

    async def _call_tool(
        self, session: MnesisSession, call: ToolPart
    ) -> tuple[str | None, str | None]:
        """``(output, error)`` of one tool call the sub-agent made."""
        plan = self.plan
        name = call.tool_name
        if name in _RETRIEVAL_TOOLS:
            return await session.execute_tool(name, call.input), None
        if plan.read_only:
            return None, f"tool {name!r} is not available to a read-only sub-agent"
        if plan.tool_handler is None or name in LCM_TOOL_NAMES:
            return None, f"tool {name!r} is not available here"
        try:
            output = plan.tool_handler(name, dict(call.input))
            if inspect.isawaitable(output):
                output = await output
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"
        return str(output), None


def _retrieval_engine_without_expansion(session: MnesisSession) -> RetrievalEngine:
    return RetrievalEngine(
        session.store,
        session.id,
        estimator=session.retrieval.estimator,
        config=session.config.retrieval,
    )


def stored_result(plan: AgentPlan, row: ItemRow) -> AgentMapResult:
    """The result of an item an earlier run finished, read back from its row."""
    base: dict[str, Any] = {
        "run_id": plan.run_id,
        "index": row.idx,
        "input": plan.inputs[row.idx],
        "session_id": row.session_id,
        "attempts": row.attempts,
        "resumed": True,
    }
    if row.state != "completed":
        return _failure(row.error, _stored_type(row.error), **base)
    try:
        outcome = _Outcome.decode(row.output)
    except (ValueError, TypeError, AttributeError) as exc:
        error = f"StoreCorruptError: the stored output of this item cannot be read ({exc})"
        return _failure(error, "StoreCorruptError", **base)
    return outcome.result(**base)


def _failure(error: str | None, error_type: str | None, **fields: Any) -> AgentMapResult:
    """The failed result of an item (``fields``: its identity and audit trail)."""
    return AgentMapResult(
        **fields, success=False, error=error, error_type=error_type, finish_reason="error"
    )


def _name(exc: BaseException) -> str:
    return type(exc).__name__


def _describe(exc: BaseException) -> str:
    """``"<error class>: <message>"``, the form stored in ``map_items.error``."""
    return f"{_name(exc)}: {str(exc) or 'no details'}"


def _stored_type(error: str | None) -> str | None:
    """The error class named at the start of a stored error, if any."""
    match = _STORED_TYPE.match(error or "")
    return match.group(1) if match else None
