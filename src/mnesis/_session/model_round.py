"""One model call of a turn: build the context, store the assistant stub, stream the
reply under the session's timeout, then store the parts (or the failure)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from mnesis._session.meter import ContextMeter
from mnesis._session.writer import MessageWriter
from mnesis.config import MnesisConfig
from mnesis.context.builder import BuiltContext, ContextBuilder
from mnesis.context.entries import SummaryEntry
from mnesis.errors import ContextOverflowError, LLMError, LLMTimeoutError, MnesisError
from mnesis.llm import LLMClient, LLMRequest
from mnesis.llm.cache import breakpoint_indexes
from mnesis.models.budget import ContextBudget
from mnesis.models.clock import now_ms
from mnesis.models.ids import new_id
from mnesis.models.message import FinishReason, Message, TextDelta
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import MessagePart, TextPart, ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import SessionRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS

__all__ = ["ModelCall", "ModelRound", "openai_breakpoints"]


def openai_breakpoints(messages: list[dict[str, Any]], built: BuiltContext) -> tuple[int, ...]:
    """Where the OpenAI rendering of ``built`` ends a prefix worth caching: the system
    prompt, the last summary (byte-identical until the next compaction) and the last
    message; the points ``to_anthropic(cache_control=True)`` marks."""
    points = [0, len(messages) - 1]
    summary = next((e.text for e in reversed(built.entries) if isinstance(e, SummaryEntry)), None)
    if summary is not None:
        found = [
            i
            for i, m in enumerate(messages)
            if m.get("role") == "user" and m.get("content") == summary
        ]
        points.extend(found[-1:])
    return breakpoint_indexes(len(messages), points)


@dataclass
class ModelCall:
    """One model call: what was sent and, once streamed, what came back."""

    request: LLMRequest
    built: BuiltContext
    assistant: Message
    text: str = ""
    tool_parts: list[ToolPart] = field(default_factory=list)
    finish: str = FinishReason.STOP
    usage: TokenUsage = field(default_factory=TokenUsage)


class ModelRound:
    """Makes the model calls of one session."""

    def __init__(
        self,
        record: SessionRecord,
        config: MnesisConfig,
        llm: LLMClient,
        model_info: ModelInfo,
        builder: ContextBuilder,
        store: ImmutableStore,
        writer: MessageWriter,
        meter: ContextMeter,
    ) -> None:
        self._record = record
        self._config = config
        self._llm = llm
        self._model_info = model_info
        self._builder = builder
        self._store = store
        self._writer = writer
        self._meter = meter

    def check_fits(self, parts: list[MessagePart], prompt: str) -> None:
        """Raise :class:`ContextOverflowError` for a user message that, with the system
        prompt alone, exceeds the usable budget: it could never be sent, so it is refused
        before it is stored."""
        budget = ContextBudget.compute(self._model_info, self._config)
        _, estimate = self._writer.part_estimates(parts)
        system = self._builder.estimator.estimate(prompt) + MESSAGE_OVERHEAD_TOKENS
        if estimate + system > budget.usable:
            raise ContextOverflowError(estimate + system, budget.usable)

    async def start(
        self, user_id: str, prompt: str, tools: list[dict[str, Any]] | None
    ) -> ModelCall:
        """Build the context and store the assistant stub the reply will fill."""
        built = await self._builder.build(self._record.id, self._model_info, prompt, self._config)
        assistant = self._writer.new_message("assistant", parent_id=user_id)
        await self._store.append_message(assistant, [])
        request = LLMRequest(
            model=self._record.model,
            messages=[],
            max_tokens=self._model_info.max_output_tokens,
            tools=tools,
        )
        if getattr(self._llm, "wire_format", "openai") == "anthropic":
            caching = getattr(self._llm, "cache_control", True) is not False
            body = built.to_anthropic(cache_control=caching)
            request.messages = body["messages"]
            request.system = body["system"]
        else:
            request.messages = built.to_openai()
            request.cache_breakpoints = openai_breakpoints(request.messages, built)
        return ModelCall(request=request, built=built, assistant=assistant)

    async def stream(self, call: ModelCall) -> AsyncGenerator[TextDelta, None]:
        """Stream the reply, yielding text as it arrives; fills ``call`` and stores the
        parts. A failure, timeout or interruption marks the stub ``error`` instead."""
        model = self._record.model
        assistant = call.assistant
        texts: list[str] = []
        settled = False
        timeout = self._config.session.model_timeout_seconds
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        chunks = self._llm.stream(call.request).__aiter__()
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError
                try:
                    # The timeout wraps only the wait for the next chunk, never the
                    # consumer's code between yields. Not asyncio.wait_for: on Python
                    # 3.11 it returns a chunk that arrives with a cancellation and
                    # loses the cancellation.
                    async with asyncio.timeout(remaining):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                if chunk.text:
                    texts.append(chunk.text)
                    yield TextDelta(message_id=assistant.id, text=chunk.text)
                for tool_call in chunk.tool_calls:
                    call.tool_parts.append(
                        ToolPart(
                            tool_name=tool_call.name or "unknown",
                            tool_call_id=tool_call.id or new_id("part"),
                            input=tool_call.arguments,
                            status=ToolStatus(state="pending", started_at=now_ms()),
                        )
                    )
                if chunk.finish_reason:
                    call.finish = chunk.finish_reason
                if chunk.usage is not None:
                    call.usage = chunk.usage
            settled = True
        except TimeoutError as exc:
            settled = True
            await self._writer.fail(assistant, texts, "timeout")
            raise LLMTimeoutError(f"model {model} did not finish within {timeout}s") from exc
        except MnesisError as exc:
            settled = True
            await self._writer.fail(assistant, texts, str(exc))
            raise
        except Exception as exc:
            settled = True
            await self._writer.fail(assistant, texts, f"{type(exc).__name__}: {exc}")
            raise LLMError(f"model {model} failed: {exc}") from exc
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
            if not settled:
                # Cancelled or abandoned mid-stream: keep what arrived.
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._writer.fail(assistant, texts, "interrupted"))
        call.text = "".join(texts)
        await self._finish(call)

    async def _finish(self, call: ModelCall) -> None:
        parts: list[MessagePart] = []
        if call.text:
            parts.append(TextPart(text=call.text))
        parts.extend(call.tool_parts)
        tokens, estimate = self._writer.part_estimates(parts)
        if not call.usage.effective_total():
            call.usage = TokenUsage(
                input=call.built.token_estimate,
                output=estimate,
                total=call.built.token_estimate + estimate,
            )
        # Parts and the message's token fields in one transaction: a crash leaves either
        # the stub or the finished turn, never parts with a stale estimate.
        await self._store.append_parts(
            call.assistant.id,
            parts,
            part_tokens=tokens,
            tokens=call.usage,
            finish_reason=call.finish,
            token_estimate=estimate,
        )
        self._meter.add(estimate)
