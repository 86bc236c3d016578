"""Storing a turn a caller made with its own model client: ``record`` (parts) and
``record_messages`` (the provider's own messages), as ordered rounds.

A turn is a user message and its rounds: one assistant message per model call, its
parts in order (text, reasoning, tool calls with their results), exactly as ``send``
stores them. :func:`split_rounds` cuts ``record``'s flat list of parts into rounds; the
readers of :mod:`mnesis.context.intake` cut provider messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mnesis._session.meter import ContextMeter
from mnesis._session.writer import MessageWriter
from mnesis.context.intake import IntakeMessage, IntakeResult
from mnesis.errors import InvalidArgumentError, PartNotFoundError
from mnesis.models.message import FinishReason, Message, MessageWithParts
from mnesis.models.parts import MessagePart, ReasoningPart, ToolPart
from mnesis.models.render import render_part
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.immutable import ImmutableStore

__all__ = ["OPEN_TURN_LOOKBACK", "Recorder", "StoredTurn", "split_rounds"]

OPEN_TURN_LOOKBACK = 16
"""How many of the newest messages are read to find the open turn's user message (read
from the store each time: another process may have written to the session)."""


def split_rounds(parts: list[MessagePart]) -> list[list[MessagePart]]:
    """``record``'s assistant parts as rounds: content (text, reasoning, ...) after a
    tool call starts the next round; metadata parts stay in the round they are in."""
    rounds: list[list[MessagePart]] = [[]]
    called = False
    for part in parts:
        if isinstance(part, ToolPart):
            called = True
        elif called and (isinstance(part, ReasoningPart) or _content(part)):
            rounds.append([])
            called = False
        rounds[-1].append(part)
    return [r for r in rounds if r]


def _content(part: MessagePart) -> bool:
    return render_part(part) is not None


@dataclass(slots=True)
class StoredTurn:
    """What one ``record`` / ``record_messages`` call stored."""

    messages: list[Message] = field(default_factory=list)
    user: Message | None = None
    """The turn's user message (stored now, or the open turn's)."""
    user_id: str = ""
    usage: TokenUsage | None = None
    tool_parts: list[ToolPart] = field(default_factory=list)
    joined: Message | None = None
    """The stored round the first message's parts were added to (Responses items)."""

    @property
    def assistant(self) -> Message | None:
        """The last assistant message stored (or added to)."""
        found = next((m for m in reversed(self.messages) if m.role == "assistant"), None)
        return found or self.joined


class Recorder:
    """Writes recorded turns of one session (the caller holds the turn lock)."""

    def __init__(
        self,
        record: SessionRecord,
        store: ImmutableStore,
        writer: MessageWriter,
        meter: ContextMeter,
    ) -> None:
        self._record = record
        self._store = store
        self._writer = writer
        self._meter = meter

    async def _open_turn(self) -> tuple[str, MessageWithParts | None]:
        """The open turn's user message ID, and the newest message when it is a round
        of that turn."""
        recent = await self._store.recent_turns([self._record.id], OPEN_TURN_LOOKBACK)
        newest: MessageWithParts | None = None
        for turn in reversed(recent):
            if turn.role == "user":
                return turn.message_id, newest
            if turn.role == "assistant":
                message = await self._store.get_message(turn.message_id)
                if newest is None and turn is recent[-1]:
                    newest = message
                if message.message.parent_id is not None:
                    return message.message.parent_id, newest
        raise InvalidArgumentError("there is no open turn to continue: start with a user message")

    async def _open_round(self, newest: MessageWithParts | None) -> MessageWithParts | None:
        """``newest`` when it is a round still open: no result stored for its calls,
        and still in the context view (not compacted)."""
        if newest is None or any(
            p.status.state in ("completed", "error") for p in newest.tool_parts
        ):
            return None
        inside = await self._store.messages_in_context(self._record.id, [newest.id])
        return newest if newest.id in inside else None

    async def _earlier(self, results: list[IntakeResult]) -> list[tuple[str, str]]:
        """``(part ID, message ID)`` of each earlier call answered; all checked first."""
        found: list[tuple[str, str]] = []
        for result in results:
            try:
                part_id, message_id = await self._store.find_tool_part(
                    self._record.id, result.call_id
                )
            except PartNotFoundError:
                raise InvalidArgumentError(
                    f"{result.where}: tool result {result.call_id!r} answers no tool call "
                    "of this session"
                ) from None
            message = await self._store.get_message(message_id)
            part = next(p for p in message.parts if isinstance(p, ToolPart) and p.id == part_id)
            if part.status.state in ("completed", "error"):
                raise InvalidArgumentError(
                    f"{result.where}: tool call {result.call_id!r} already has its result"
                )
            found.append((part_id, message_id))
        return found

    async def store(
        self,
        messages: list[IntakeMessage],
        earlier: list[IntakeResult],
        *,
        tokens: TokenUsage | None,
        finish_reason: str | None,
        joins_round: bool = False,
    ) -> StoredTurn:
        """Check, then store: the results of earlier calls, then every message (one
        transaction). ``finish_reason`` is the last assistant message's (None: ``stop``,
        or ``tool_calls`` when it left calls pending)."""
        turn = StoredTurn()
        needs_open = bool(earlier) or (bool(messages) and messages[0].role == "assistant")
        newest: MessageWithParts | None = None
        if needs_open:
            turn.user_id, newest = await self._open_turn()
        join = await self._open_round(newest) if joins_round else None
        targets = await self._earlier(earlier)
        batch: list[NewMessage] = []
        writer = self._writer
        added: list[MessagePart] = []
        if join is not None and messages and messages[0].role == "assistant":
            added = messages[0].parts
            messages = messages[1:]
            turn.joined = join.message
            turn.tool_parts.extend(p for p in added if isinstance(p, ToolPart))
        for item in messages:
            if item.role == "user":
                message = writer.new_message("user")
                turn.user, turn.user_id = message, message.id
            else:
                message = writer.new_message("assistant", parent_id=turn.user_id)
                calls = [p for p in item.parts if isinstance(p, ToolPart)]
                turn.tool_parts.extend(calls)
                message.finish_reason = FinishReason.TOOL_CALLS if calls else FinishReason.STOP
            batch.append(NewMessage(message, item.parts, writer.estimate(message, item.parts)))
            turn.messages.append(message)
        last = next((m for m in reversed(turn.messages) if m.role == "assistant"), None)
        added_tokens, _ = writer.part_estimates(added)
        if last is not None or turn.joined is not None:
            user_tokens = sum(m.token_estimate for m in turn.messages if m.role == "user")
            output = sum(m.token_estimate for m in turn.messages if m.role == "assistant")
            output += sum(added_tokens) if turn.joined is not None else 0
            turn.usage = tokens or TokenUsage(
                input=user_tokens, output=output, total=user_tokens + output
            )
        if last is not None:
            pending = any(
                isinstance(p, ToolPart) and p.status.state in ("pending", "running")
                for p in batch[turn.messages.index(last)].parts
            )
            if finish_reason is not None:
                last.finish_reason = finish_reason
            elif pending:
                last.finish_reason = FinishReason.TOOL_CALLS
            last.tokens = turn.usage
        if turn.joined is not None:
            final = last is None
            await self._add_to_round(
                turn.joined,
                added,
                added_tokens,
                finish_reason if final else None,
                turn.usage if final else None,
            )
        for result, (part_id, message_id) in zip(earlier, targets, strict=True):
            await writer.complete_tool_part(part_id, message_id, result.output, result.error)
        if batch:
            await self._store.append_messages(batch)
            self._meter.add(sum(m.token_estimate for m in turn.messages))
        return turn

    async def _add_to_round(
        self,
        message: Message,
        parts: list[MessagePart],
        tokens: list[int],
        finish_reason: str | None,
        usage: TokenUsage | None,
    ) -> None:
        """Add ``parts`` to a stored round (one transaction) and count them."""
        calls = any(isinstance(p, ToolPart) for p in parts)
        reason = finish_reason or (FinishReason.TOOL_CALLS if calls else message.finish_reason)
        estimate = message.token_estimate + sum(tokens)
        await self._store.append_parts(
            message.id,
            parts,
            part_tokens=tokens,
            tokens=usage,
            finish_reason=reason,
            token_estimate=estimate,
        )
        message.token_estimate = estimate
        self._meter.add(sum(tokens))
