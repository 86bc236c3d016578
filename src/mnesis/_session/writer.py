"""Building and persisting the messages of one session's turns, keeping the context
meter in step with every estimate written."""

from __future__ import annotations

from mnesis._session.meter import ContextMeter
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.models.clock import now_ms
from mnesis.models.ids import new_id
from mnesis.models.message import FinishReason, Message, Role
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import MessagePart, RetryPart, TextPart, ToolPart
from mnesis.store.base import SessionRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["MessageWriter"]


class MessageWriter:
    """New messages of one session: IDs, token estimates, rows, ``message.created``."""

    def __init__(
        self,
        record: SessionRecord,
        model_info: ModelInfo,
        store: ImmutableStore,
        estimator: TokenEstimator,
        bus: EventBus,
        meter: ContextMeter,
    ) -> None:
        self._record = record
        self._model_info = model_info
        self._store = store
        self._estimator = estimator
        self._bus = bus
        self._meter = meter

    def new_message(self, role: Role, *, parent_id: str | None = None) -> Message:
        """A fresh, not yet stored message of this session."""
        return Message(
            id=new_id("msg"),
            session_id=self._record.id,
            role=role,
            created_at=now_ms(),
            agent=self._record.agent,
            model_id=self._model_info.model_id if role == "assistant" else None,
            provider_id=self._model_info.provider_id if role == "assistant" else None,
            parent_id=parent_id,
        )

    def part_estimates(self, parts: list[MessagePart]) -> tuple[list[int], int]:
        """Per-part token estimates and the message total they make."""
        tokens = [self._estimator.estimate_part(p) for p in parts]
        return tokens, MESSAGE_OVERHEAD_TOKENS + sum(tokens)

    def estimate(self, message: Message, parts: list[MessagePart]) -> list[int]:
        """Set ``message.token_estimate`` from ``parts``; returns the per-part estimates."""
        tokens, message.token_estimate = self.part_estimates(parts)
        return tokens

    async def append(self, role: Role, parts: list[MessagePart]) -> Message:
        """Store a new message with its parts (one transaction) and count it."""
        message = self.new_message(role)
        tokens = self.estimate(message, parts)
        await self._store.append_message(message, parts, part_tokens=tokens)
        self._meter.add(message.token_estimate)
        return message

    def publish(self, message: Message) -> None:
        """Announce a stored message (``message.created``)."""
        self._bus.publish(
            MnesisEvent.MESSAGE_CREATED,
            {"session_id": self._record.id, "message_id": message.id, "role": message.role},
        )

    async def fail(self, assistant: Message, texts: list[str], error: str) -> None:
        """Finish an assistant stub as failed: the text that arrived and the error."""
        parts: list[MessagePart] = []
        if texts:
            parts.append(TextPart(text="".join(texts)))
        parts.append(RetryPart(error=error[:2000]))
        tokens, estimate = self.part_estimates(parts)
        await self._store.append_parts(
            assistant.id,
            parts,
            part_tokens=tokens,
            finish_reason=FinishReason.ERROR,
            token_estimate=estimate,
        )
        self._meter.add(estimate)
        texts.clear()

    async def complete_tool_part(
        self, part_id: str, message_id: str, output: str | None, error: str | None
    ) -> None:
        """Store a tool call's result (``pending`` → ``completed`` / ``error``) and the
        message's new estimate."""
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
            completed_at=now_ms(),
            message_token_estimate=estimate,
        )
        self._meter.add(estimate - message.message.token_estimate)
