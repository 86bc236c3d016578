"""The turn runner: ``send`` / ``stream`` / ``record`` and the results of tool calls.

The ordering guarantees these keep are stated in :mod:`mnesis.session`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from mnesis._session.continuation import continuation_parent
from mnesis._session.doom import DoomLoopDetector
from mnesis._session.gate import CompactionGate
from mnesis._session.meter import ContextMeter
from mnesis._session.model_round import ModelRound
from mnesis._session.recording import Recorder, StoredTurn, split_rounds
from mnesis._session.state import OpenState
from mnesis._session.tools import ToolLoop
from mnesis._session.validation import check_tokens, normalize_parts
from mnesis._session.writer import MessageWriter
from mnesis.context.intake import IntakeMessage
from mnesis.context.recording import parse_messages
from mnesis.errors import InvalidArgumentError
from mnesis.models.clock import now_ms
from mnesis.models.message import (
    CompactionResult,
    ContextBreakdown,
    FinishReason,
    RecordResult,
    TextDelta,
    TurnComplete,
    TurnResult,
    TurnSnapshot,
)
from mnesis.models.parts import MessagePart, TextPart, ToolPart
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import SessionRecord
from mnesis.store.immutable import ImmutableStore

__all__ = ["DOOM_LOOP_ERROR", "DOOM_LOOP_FINISH", "HISTORY_WINDOW", "PartCallback", "TurnRunner"]

PartCallback = Callable[[TextPart], Awaitable[None] | None]

HISTORY_WINDOW = 1_000
"""How many recent turn snapshots a session object keeps for ``history()``: older
turns are in the store (``messages()``), so memory stays flat in session length."""
DOOM_LOOP_FINISH = "doom_loop"
"""The ``finish_reason`` of a turn whose tool loop stopped on a doom loop."""
DOOM_LOOP_ERROR = (
    "Not run: the same tool call with the same input was repeated too many times. "
    "Answer with what you have, or try a different call."
)


class TurnRunner:
    """Runs one session's turns, one at a time, and keeps the recent turns' snapshots."""

    def __init__(
        self,
        *,
        record: SessionRecord,
        store: ImmutableStore,
        state: OpenState,
        writer: MessageWriter,
        model_round: ModelRound,
        meter: ContextMeter,
        gate: CompactionGate,
        doom: DoomLoopDetector,
        tools: ToolLoop,
        token_usage: TokenUsage,
    ) -> None:
        self._record = record
        self._store = store
        self._state = state
        self._writer = writer
        self._round = model_round
        self._meter = meter
        self._gate = gate
        self._doom = doom
        self._tools = tools
        self._recorder = Recorder(record, store, writer, meter)
        self.token_usage = token_usage
        """Cumulative model token usage of the session."""
        self.snapshots: deque[TurnSnapshot] = deque(maxlen=HISTORY_WINDOW)
        """Snapshots of the last :data:`HISTORY_WINDOW` turns made through this runner."""
        self.turn_count = 0
        """Turns made through this runner (the next snapshot's ``turn_index``)."""
        self._lock: asyncio.Lock | None = None

    async def send(
        self,
        message: str | list[MessagePart] | None,
        *,
        tools: list[dict[str, Any]] | None,
        on_part: PartCallback | None,
        system_prompt: str | None,
        run_lcm_tools: bool,
    ) -> TurnResult:
        """:meth:`stream` to the end, handing each text delta to ``on_part``."""
        if on_part is not None and not callable(on_part):
            raise InvalidArgumentError(f"on_part must be callable, got {type(on_part).__name__}")
        result: TurnResult | None = None
        async for item in self.stream(
            message, tools=tools, system_prompt=system_prompt, run_lcm_tools=run_lcm_tools
        ):
            if isinstance(item, TextDelta):
                if on_part is not None:
                    outcome = on_part(TextPart(text=item.text))
                    if inspect.isawaitable(outcome):
                        await outcome
            else:
                result = item.result
        assert result is not None
        return result

    async def stream(
        self,
        message: str | list[MessagePart] | None,
        *,
        tools: list[dict[str, Any]] | None,
        system_prompt: str | None,
        run_lcm_tools: bool,
    ) -> AsyncIterator[TextDelta | TurnComplete]:
        """One turn: the user message, then model rounds (running ``lcm_*`` calls between
        them when ``run_lcm_tools``), yielding text deltas and one :class:`TurnComplete`.
        Without a message the current turn continues (:mod:`~mnesis._session.continuation`)."""
        self._state.check_open()
        parts = None if message is None else normalize_parts(message, "message")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        if tools is not None and not isinstance(tools, list):
            raise InvalidArgumentError("tools must be a list of tool definitions")
        prompt = self._record.system_prompt if system_prompt is None else system_prompt
        async with self._turn_lock():
            if parts is None:
                user_id = await continuation_parent(self._store, self._record.id)
            else:
                self._round.check_fits(parts, prompt)
                user = await self._writer.append("user", parts)
                self._writer.publish(user)
                user_id = user.id
            compaction = await self._gate.before_model_call()
            rounds = 0
            while True:
                holder: list[TurnResult] = []
                round_stream = self._model_round(user_id, prompt, tools, compaction, holder)
                async with contextlib.aclosing(round_stream) as deltas:
                    async for delta in deltas:
                        yield delta
                result = holder[0]
                calls = self._tools.calls_to_run(result.tool_calls, rounds) if run_lcm_tools else []
                if calls and result.doom_loop_detected:
                    result = await self._stop_doom_loop(result, calls)
                    break
                if not calls:
                    break
                for call in calls:
                    self._state.check_open()
                    output = await self._tools.execute(call.tool_name, call.input)
                    assert call.id is not None
                    await self._writer.complete_tool_part(call.id, result.message_id, output, None)
                rounds += 1
                compaction = await self._gate.before_model_call()
        yield TurnComplete(result=result)

    async def _stop_doom_loop(self, result: TurnResult, calls: list[ToolPart]) -> TurnResult:
        """End the tool loop on a doom loop: the repeated calls are answered with an
        error (so the next context stays valid) instead of being run again."""
        for call in calls:
            assert call.id is not None
            await self._writer.complete_tool_part(call.id, result.message_id, None, DOOM_LOOP_ERROR)
        return result.model_copy(update={"finish_reason": DOOM_LOOP_FINISH})

    async def _model_round(
        self,
        user_id: str,
        prompt: str,
        tools: list[dict[str, Any]] | None,
        compaction: CompactionResult | None,
        holder: list[TurnResult],
    ) -> AsyncGenerator[TextDelta, None]:
        """One model call, then the turn's bookkeeping. Appends the result to ``holder``."""
        call = await self._round.start(user_id, prompt, tools)
        async with contextlib.aclosing(self._round.stream(call)) as deltas:
            async for delta in deltas:
                yield delta
        self.token_usage = self.token_usage + call.usage
        doom = self._doom.check(call.tool_parts)
        self._writer.publish(call.assistant)
        triggered = await self._gate.after_turn()
        built = call.built
        self._keep(
            TurnSnapshot(
                turn_index=self.turn_count,
                user_message_id=user_id,
                assistant_message_id=call.assistant.id,
                context=ContextBreakdown(
                    system_prompt=built.system_prompt_tokens,
                    summaries=built.summary_token_count,
                    messages=built.raw_message_tokens,
                    tool_outputs=built.tool_output_tokens,
                    total=built.token_estimate,
                    budget=built.budget.usable,
                ),
                tokens=call.usage,
                compaction_triggered=triggered or compaction is not None,
                compact_result=compaction,
                created_at=now_ms(),
            )
        )
        try:
            reason: FinishReason | str = FinishReason(call.finish)
        except ValueError:
            reason = call.finish
        holder.append(
            TurnResult(
                message_id=call.assistant.id,
                user_message_id=user_id,
                text=call.text,
                finish_reason=reason,
                tokens=call.usage,
                cost=0.0,
                compaction_triggered=triggered or compaction is not None,
                compaction_result=compaction,
                doom_loop_detected=doom,
                tool_calls=call.tool_parts,
            )
        )

    async def record(
        self,
        user_message: str | list[MessagePart],
        assistant_response: str | list[MessagePart],
        *,
        tokens: TokenUsage | None,
        finish_reason: FinishReason | str,
    ) -> RecordResult:
        """Persist a turn made with the caller's own model client (one transaction); a
        text after a tool call starts the next round (its own assistant message)."""
        self._state.check_open()
        user_parts = normalize_parts(user_message, "user_message")
        assistant_parts = normalize_parts(assistant_response, "assistant_response")
        tokens = check_tokens(tokens)
        if not isinstance(finish_reason, str) or not finish_reason.strip():
            raise InvalidArgumentError(
                f"finish_reason must be a FinishReason or a non-empty string, got {finish_reason!r}"
            )
        reason = str(
            finish_reason.value if isinstance(finish_reason, FinishReason) else finish_reason
        )
        messages = [IntakeMessage("user", user_parts)]
        messages += [IntakeMessage("assistant", r) for r in split_rounds(assistant_parts)]
        async with self._turn_lock():
            stored = await self._recorder.store(messages, [], tokens=tokens, finish_reason=reason)
            return await self._recorded(stored)

    async def record_messages(
        self,
        messages: object,
        *,
        format: str,
        tokens: TokenUsage | None,
        finish_reason: FinishReason | str | None,
    ) -> RecordResult:
        """Persist provider messages of a turn, or of the open turn's continuation."""
        self._state.check_open()
        intake = parse_messages(messages, format)
        tokens = check_tokens(tokens)
        reason: str | None = None
        if finish_reason is not None:
            if not isinstance(finish_reason, str) or not finish_reason.strip():
                raise InvalidArgumentError(
                    "finish_reason must be None, a FinishReason or a non-empty string, "
                    f"got {finish_reason!r}"
                )
            reason = str(
                finish_reason.value if isinstance(finish_reason, FinishReason) else finish_reason
            )
        async with self._turn_lock():
            stored = await self._recorder.store(
                intake.messages,
                intake.earlier_results,
                tokens=tokens,
                finish_reason=reason,
                joins_round=intake.joins_round,
            )
            return await self._recorded(stored)

    async def _recorded(self, stored: StoredTurn) -> RecordResult:
        """The bookkeeping after a recorded turn: usage, events, doom loop, compaction."""
        writer = self._writer
        if stored.usage is not None:
            self.token_usage = self.token_usage + stored.usage
        for message in stored.messages:
            writer.publish(message)
        doom = self._doom.check(stored.tool_parts) if stored.tool_parts else False
        await self._gate.before_model_call()
        triggered = await self._gate.after_turn()
        assistant = stored.assistant
        if assistant is not None:
            self._keep(
                TurnSnapshot(
                    turn_index=self.turn_count,
                    user_message_id=stored.user_id,
                    assistant_message_id=assistant.id,
                    context=ContextBreakdown(total=self._meter.tokens, messages=self._meter.tokens),
                    tokens=stored.usage or TokenUsage(),
                    compaction_triggered=triggered,
                    created_at=assistant.created_at,
                )
            )
        return RecordResult(
            user_message_id=stored.user_id,
            assistant_message_id=assistant.id if assistant is not None else "",
            tokens=stored.usage or TokenUsage(),
            compaction_triggered=triggered,
            doom_loop_detected=doom,
            message_ids=[m.id for m in stored.messages],
        )

    async def complete_tool_call(
        self, tool_call_id: str, *, output: str | None, error: str | None
    ) -> None:
        """Store the result of a tool call the model asked for (``pending`` → done)."""
        self._state.check_open()
        if (output is None) == (error is None):
            raise InvalidArgumentError("give exactly one of output= or error=")
        text = output if output is not None else error
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"tool {'output' if output is not None else 'error'} must be a string, "
                f"got {type(text).__name__}"
            )
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise InvalidArgumentError("tool_call_id must be a non-empty string")
        part_id, message_id = await self._store.find_tool_part(self._record.id, tool_call_id)
        await self._writer.complete_tool_part(part_id, message_id, output, error)

    def _keep(self, snapshot: TurnSnapshot) -> None:
        self.snapshots.append(snapshot)  # the deque drops the oldest beyond the window
        self.turn_count += 1

    def _turn_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock
