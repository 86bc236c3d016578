"""The turns of a :class:`MnesisSession`: ``send`` / ``stream`` / ``record`` and the
results of the model's tool calls.

The ordering guarantees these methods keep are stated in :mod:`mnesis.session`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mnesis.config import MnesisConfig
from mnesis.context.builder import BuiltContext, ContextBuilder
from mnesis.errors import InvalidArgumentError, LLMError, LLMTimeoutError, MnesisError
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.llm import LLMClient, LLMRequest
from mnesis.models.ids import new_id
from mnesis.models.message import (
    CompactionResult,
    ContextBreakdown,
    FinishReason,
    Message,
    RecordResult,
    Role,
    TextDelta,
    TurnComplete,
    TurnResult,
    TurnSnapshot,
)
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import MessagePart, RetryPart, TextPart, ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.retrieval.tools import LCM_TOOL_NAMES
from mnesis.session_input import _normalize
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["PartCallback", "TurnsMixin"]

PartCallback = Callable[[TextPart], Awaitable[None] | None]


def _now_ms() -> int:
    return int(time.time() * 1000)


class TurnsMixin:
    """Sending, streaming and recording turns (part of :class:`~mnesis.session.MnesisSession`)."""

    # Set up by MnesisSession.__init__; declared here for the type checker.
    _record: SessionRecord
    _store: ImmutableStore
    _config: MnesisConfig
    _llm: LLMClient
    _model_info: ModelInfo
    _estimator: TokenEstimator
    _builder: ContextBuilder
    _bus: EventBus
    _context_tokens: int
    _token_usage: TokenUsage
    _turns: list[TurnSnapshot]
    _tool_signatures: deque[str]
    _lock: asyncio.Lock | None

    if TYPE_CHECKING:

        @property
        def id(self) -> str: ...

        @property
        def model(self) -> str: ...

        def _check_open(self) -> None: ...

        async def _ensure_under_hard_limit(self) -> CompactionResult | None: ...

        async def _after_turn(self) -> bool: ...

        async def execute_tool(self, name: str, arguments: dict[str, Any] | str | None) -> str: ...

    # -- turns --------------------------------------------------------------
    async def send(
        self,
        message: str | list[MessagePart],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_part: PartCallback | None = None,
        system_prompt: str | None = None,
        run_lcm_tools: bool = False,
    ) -> TurnResult:
        """Send a user message to the model and persist the whole turn.

        Raises :class:`~mnesis.errors.LLMError` when the model fails (the user message
        and the assistant stub stay stored, the stub marked ``error``).
        """
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
        message: str | list[MessagePart],
        *,
        tools: list[dict[str, Any]] | None = None,
        system_prompt: str | None = None,
        run_lcm_tools: bool = False,
    ) -> AsyncIterator[TextDelta | TurnComplete]:
        """Like :meth:`send`, yielding :class:`TextDelta` as text arrives, then
        one :class:`TurnComplete`.

        With ``run_lcm_tools=True`` the session executes the model's ``lcm_*`` tool
        calls itself and calls the model again, up to ``session.max_tool_rounds``
        times; the result is the last round's.
        """
        self._check_open()
        parts = _normalize(message, "message")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        if tools is not None and not isinstance(tools, list):
            raise InvalidArgumentError("tools must be a list of tool definitions")
        prompt = self._record.system_prompt if system_prompt is None else system_prompt
        async with self._turn_lock():
            user = await self._append("user", parts)
            self._publish_message(user)
            compaction = await self._ensure_under_hard_limit()
            rounds = 0
            while True:
                holder: list[TurnResult] = []
                round_stream = self._model_round(user.id, prompt, tools, compaction, holder)
                async with contextlib.aclosing(round_stream) as deltas:
                    async for delta in deltas:
                        yield delta
                result = holder[0]
                lcm_calls = [c for c in result.tool_calls if c.tool_name in LCM_TOOL_NAMES]
                other_calls = len(result.tool_calls) - len(lcm_calls)
                if (
                    not run_lcm_tools
                    or not lcm_calls
                    or other_calls
                    or rounds >= self._config.session.max_tool_rounds
                ):
                    # Any call mnesis cannot run itself goes back to the caller.
                    break
                for call in lcm_calls:
                    output = await self.execute_tool(call.tool_name, call.input)
                    assert call.id is not None
                    await self._complete_tool_part(call.id, result.message_id, output, None)
                rounds += 1
                compaction = await self._ensure_under_hard_limit()
        yield TurnComplete(result=result)

    async def _model_round(
        self,
        user_id: str,
        prompt: str,
        tools: list[dict[str, Any]] | None,
        compaction: CompactionResult | None,
        holder: list[TurnResult],
    ) -> AsyncGenerator[TextDelta, None]:
        """One model call: build, stub, stream, persist. Appends the result to ``holder``."""
        built = await self._builder.build(self.id, self._model_info, prompt, self._config)
        assistant = self._new_message("assistant", parent_id=user_id)
        await self._store.append_message(assistant, [])
        request = LLMRequest(
            model=self.model,
            messages=built.to_dicts(),
            max_tokens=self._model_info.max_output_tokens,
            tools=tools,
        )
        texts: list[str] = []
        tool_parts: list[ToolPart] = []
        finish: str = FinishReason.STOP
        usage = TokenUsage()
        settled = False
        timeout = self._config.session.model_timeout_seconds
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        chunks = self._llm.stream(request).__aiter__()
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError
                try:
                    # The timeout wraps only the wait for the next chunk, never
                    # the consumer's code between yields.
                    chunk = await asyncio.wait_for(anext(chunks), remaining)
                except StopAsyncIteration:
                    break
                if chunk.text:
                    texts.append(chunk.text)
                    yield TextDelta(message_id=assistant.id, text=chunk.text)
                for call in chunk.tool_calls:
                    tool_parts.append(
                        ToolPart(
                            tool_name=call.name or "unknown",
                            tool_call_id=call.id or new_id("part"),
                            input=call.arguments,
                            status=ToolStatus(state="pending", started_at=_now_ms()),
                        )
                    )
                if chunk.finish_reason:
                    finish = chunk.finish_reason
                if chunk.usage is not None:
                    usage = chunk.usage
            settled = True
        except TimeoutError as exc:
            settled = True
            await self._fail_turn(assistant, texts, "timeout")
            raise LLMTimeoutError(f"model {self.model} did not finish within {timeout}s") from exc
        except MnesisError as exc:
            settled = True
            await self._fail_turn(assistant, texts, str(exc))
            raise
        except Exception as exc:
            settled = True
            await self._fail_turn(assistant, texts, f"{type(exc).__name__}: {exc}")
            raise LLMError(f"model {self.model} failed: {exc}") from exc
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
            if not settled:
                # Cancelled or abandoned mid-stream: keep what arrived.
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._fail_turn(assistant, texts, "interrupted"))
        result = await self._finish_assistant(
            assistant, "".join(texts), tool_parts, finish, usage, built, compaction, user_id
        )
        holder.append(result)

    async def record(
        self,
        user_message: str | list[MessagePart],
        assistant_response: str | list[MessagePart],
        *,
        tokens: TokenUsage | None = None,
        finish_reason: FinishReason | str = "stop",
    ) -> RecordResult:
        """Persist a turn made with your own model client (both messages, one transaction).

        Tool calls go in ``assistant_response`` as :class:`ToolPart` objects.
        """
        self._check_open()
        user_parts = _normalize(user_message, "user_message")
        assistant_parts = _normalize(assistant_response, "assistant_response")
        if tokens is not None and not isinstance(tokens, TokenUsage):
            raise InvalidArgumentError(f"tokens must be a TokenUsage, got {type(tokens).__name__}")
        if not isinstance(finish_reason, str) or not finish_reason.strip():
            raise InvalidArgumentError(
                f"finish_reason must be a FinishReason or a non-empty string, got {finish_reason!r}"
            )
        reason = str(
            finish_reason.value if isinstance(finish_reason, FinishReason) else finish_reason
        )
        async with self._turn_lock():
            user = self._new_message("user")
            user_tokens = self._estimate(user, user_parts)
            assistant = self._new_message("assistant", parent_id=user.id)
            assistant_tokens = self._estimate(assistant, assistant_parts)
            usage = tokens or TokenUsage(
                input=user.token_estimate,
                output=assistant.token_estimate,
                total=user.token_estimate + assistant.token_estimate,
            )
            assistant.tokens = usage
            assistant.finish_reason = reason
            await self._store.append_messages(
                [
                    NewMessage(user, user_parts, user_tokens),
                    NewMessage(assistant, assistant_parts, assistant_tokens),
                ]
            )
            self._context_tokens += user.token_estimate + assistant.token_estimate
            self._token_usage = self._token_usage + usage
            self._publish_message(user)
            doom = self._check_doom_loop([p for p in assistant_parts if isinstance(p, ToolPart)])
            self._publish_message(assistant)
            await self._ensure_under_hard_limit()
            triggered = await self._after_turn()
            self._turns.append(
                TurnSnapshot(
                    turn_index=len(self._turns),
                    user_message_id=user.id,
                    assistant_message_id=assistant.id,
                    context=ContextBreakdown(
                        total=self._context_tokens, messages=self._context_tokens
                    ),
                    tokens=usage,
                    compaction_triggered=triggered,
                    created_at=assistant.created_at,
                )
            )
        return RecordResult(
            user_message_id=user.id,
            assistant_message_id=assistant.id,
            tokens=usage,
            compaction_triggered=triggered,
            doom_loop_detected=doom,
        )

    async def complete_tool_call(
        self, tool_call_id: str, *, output: str | None = None, error: str | None = None
    ) -> None:
        """Store the result of a tool call the model asked for (``pending`` → done)."""
        self._check_open()
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
        part_id, message_id = await self._store.find_tool_part(self.id, tool_call_id)
        await self._complete_tool_part(part_id, message_id, output, error)

    async def _complete_tool_part(
        self, part_id: str, message_id: str, output: str | None, error: str | None
    ) -> None:
        message = await self._store.get_message(message_id)
        for part in message.parts:
            if isinstance(part, ToolPart) and part.id == part_id:
                part.status.state = "completed" if error is None else "error"
                part.output = output if output is not None else part.output
                part.error_message = error if error is not None else part.error_message
        estimate = self._estimator.estimate_message(message)
        await self._store.update_part_status(
            part_id,
            state="completed" if error is None else "error",
            output=output,
            error_message=error,
            completed_at=_now_ms(),
            message_token_estimate=estimate,
        )
        self._context_tokens += estimate - message.message.token_estimate

    # -- turn internals -----------------------------------------------------
    def _turn_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def _new_message(self, role: Role, *, parent_id: str | None = None) -> Message:
        return Message(
            id=new_id("msg"),
            session_id=self.id,
            role=role,
            created_at=_now_ms(),
            agent=self._record.agent,
            model_id=self._model_info.model_id if role == "assistant" else None,
            provider_id=self._model_info.provider_id if role == "assistant" else None,
            parent_id=parent_id,
        )

    def _part_estimates(self, parts: list[MessagePart]) -> tuple[list[int], int]:
        """Per-part token estimates and the message total they make."""
        tokens = [self._estimator.estimate_part(p) for p in parts]
        return tokens, MESSAGE_OVERHEAD_TOKENS + sum(tokens)

    def _estimate(self, message: Message, parts: list[MessagePart]) -> list[int]:
        tokens, message.token_estimate = self._part_estimates(parts)
        return tokens

    async def _append(self, role: Role, parts: list[MessagePart]) -> Message:
        message = self._new_message(role)
        tokens = self._estimate(message, parts)
        await self._store.append_message(message, parts, part_tokens=tokens)
        self._context_tokens += message.token_estimate
        return message

    def _publish_message(self, message: Message) -> None:
        self._bus.publish(
            MnesisEvent.MESSAGE_CREATED,
            {"session_id": self.id, "message_id": message.id, "role": message.role},
        )

    async def _fail_turn(self, assistant: Message, texts: list[str], error: str) -> None:
        parts: list[MessagePart] = []
        if texts:
            parts.append(TextPart(text="".join(texts)))
        parts.append(RetryPart(error=error[:2000]))
        tokens, estimate = self._part_estimates(parts)
        await self._store.append_parts(
            assistant.id,
            parts,
            part_tokens=tokens,
            finish_reason=FinishReason.ERROR,
            token_estimate=estimate,
        )
        self._context_tokens += estimate
        texts.clear()

    async def _finish_assistant(
        self,
        assistant: Message,
        text: str,
        tool_parts: list[ToolPart],
        finish: str,
        usage: TokenUsage,
        built: BuiltContext,
        compaction: CompactionResult | None,
        user_id: str,
    ) -> TurnResult:
        parts: list[MessagePart] = []
        if text:
            parts.append(TextPart(text=text))
        parts.extend(tool_parts)
        tokens, estimate = self._part_estimates(parts)
        if not usage.effective_total():
            usage = TokenUsage(
                input=built.token_estimate,
                output=estimate,
                total=built.token_estimate + estimate,
            )
        # Parts and the message's token fields in one transaction: a crash leaves either
        # the stub or the finished turn, never parts with a stale estimate.
        await self._store.append_parts(
            assistant.id,
            parts,
            part_tokens=tokens,
            tokens=usage,
            finish_reason=finish,
            token_estimate=estimate,
        )
        self._context_tokens += estimate
        self._token_usage = self._token_usage + usage
        doom = self._check_doom_loop(tool_parts)
        self._publish_message(assistant)
        triggered = await self._after_turn()
        self._turns.append(
            TurnSnapshot(
                turn_index=len(self._turns),
                user_message_id=user_id,
                assistant_message_id=assistant.id,
                context=ContextBreakdown(
                    system_prompt=built.system_prompt_tokens,
                    summaries=built.summary_token_count,
                    messages=built.raw_message_tokens,
                    tool_outputs=built.tool_output_tokens,
                    total=built.token_estimate,
                    budget=built.budget.usable,
                ),
                tokens=usage,
                compaction_triggered=triggered or compaction is not None,
                created_at=_now_ms(),
            )
        )
        try:
            reason: FinishReason | str = FinishReason(finish)
        except ValueError:
            reason = finish
        return TurnResult(
            message_id=assistant.id,
            user_message_id=user_id,
            text=text,
            finish_reason=reason,
            tokens=usage,
            cost=0.0,
            compaction_triggered=triggered or compaction is not None,
            compaction_result=compaction,
            doom_loop_detected=doom,
            tool_calls=tool_parts,
        )

    def _check_doom_loop(self, tool_parts: list[ToolPart]) -> bool:
        detected = False
        threshold = self._config.session.doom_loop_threshold
        for part in tool_parts:
            signature = (
                part.tool_name + "\x00" + json.dumps(part.input, sort_keys=True, default=str)
            )
            self._tool_signatures.append(signature)
            if len(self._tool_signatures) >= threshold and len(set(self._tool_signatures)) == 1:
                detected = True
                self._bus.publish(
                    MnesisEvent.DOOM_LOOP_DETECTED,
                    {
                        "session_id": self.id,
                        "tool_name": part.tool_name,
                        "input": part.input,
                        "count": len(self._tool_signatures),
                    },
                )
        return detected
