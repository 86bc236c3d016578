"""Store parsed transcript records: sessions made on demand, messages in large batches,
tool calls paired with their results by call ID.

A tool call whose result has not arrived when its batch is written is stored
``running`` and completed in place when the result comes (the tool lifecycle is the
one mutation the append-only store permits), in this import or a later one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mnesis.errors import PartNotFoundError
from mnesis.importers.records import Meta, ParsedItem, ToolCall, ToolResult, Turn
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, ReasoningPart, TextPart, ToolPart, ToolStatus
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import heuristic_token_count

__all__ = ["SIDECHAIN", "ImportWriter"]

SIDECHAIN = "sidechain"
"""Session key of the sub-agent (sidechain) turns of a Claude Code session."""
_MESSAGE_OVERHEAD = 4
_TITLE_CHARS = 80


def _part_tokens(part: MessagePart) -> int:
    if isinstance(part, TextPart | ReasoningPart):
        return heuristic_token_count(part.text)
    if isinstance(part, ToolPart):
        size = heuristic_token_count(part.output or "") + heuristic_token_count(str(part.input))
        return size + 8
    return 0


@dataclass(slots=True)
class _Pending:
    message: Message
    parts: list[MessagePart]
    merge_key: str | None


@dataclass(slots=True)
class _Sink:
    """One target session: created on the first write, its unwritten messages."""

    key: str | None
    session_id: str
    created: bool
    buffer: list[_Pending] = field(default_factory=list)
    model: str | None = None
    first_text: str | None = None
    first_at: int = 0


class ImportWriter:
    """Collects :class:`ParsedItem` records and writes them with ``append_messages``."""

    def __init__(
        self,
        store: ImmutableStore,
        *,
        label: str,
        sessions: dict[str, str] | None = None,
        parent_key: str | None = None,
    ) -> None:
        """``sessions`` maps session keys (``""`` for the file's own) to sessions that an
        earlier import created; ``label`` starts the titles of new sessions."""
        self.store = store
        self.label = label
        self.meta = Meta()
        self._sinks: dict[str | None, _Sink] = {}
        for key, session_id in (sessions or {}).items():
            self._sinks[key or None] = _Sink(key or None, session_id, created=True)
        self._open_calls: dict[str, ToolPart] = {}
        self._written_calls: dict[str, tuple[str, str]] = {}
        self._late: list[tuple[ToolResult, str | None]] = []
        self._parent_key = parent_key
        self.messages = 0
        self.buffered = 0
        self.buffered_chars = 0
        """Characters of text and tool output waiting for the next flush."""
        self.tool_results = 0
        self.orphan_results = 0
        self.created_ids: list[str] = []
        """Sessions this writer created, in order."""

    # -- collecting --------------------------------------------------------------
    def _sink(self, key: str | None) -> _Sink:
        sink = self._sinks.get(key)
        if sink is None:
            sink = _Sink(key, new_id("sess"), created=False)
            self._sinks[key] = sink
        return sink

    def add(self, item: ParsedItem) -> None:
        """Take one parsed record (buffered until :meth:`flush`)."""
        if isinstance(item, Meta):
            for name in ("cwd", "model", "title", "source_id"):
                value = getattr(item, name)
                if value and not getattr(self.meta, name):
                    setattr(self.meta, name, value)
            return
        key = SIDECHAIN if getattr(item, "sidechain", False) else item.session_key
        if isinstance(item, ToolResult):
            self._result(item, key)
            return
        self._turn(item, key)

    def _turn(self, turn: Turn, key: str | None) -> None:
        sink = self._sink(key)
        parts: list[MessagePart] = []
        for piece in turn.parts:
            if isinstance(piece, ToolCall):
                part = ToolPart(
                    tool_name=piece.name or "unknown",
                    tool_call_id=piece.call_id,
                    input=piece.input,
                    status=ToolStatus(state="running", started_at=turn.created_at),
                )
                self._open_calls[piece.call_id] = part
                parts.append(part)
            elif piece.text:
                parts.append(piece)
                self.buffered_chars += len(piece.text)
        if not parts:
            return
        if turn.model and sink.model is None and turn.role == "assistant":
            sink.model = turn.model
        if sink.first_text is None and turn.role == "user":
            text = next((p.text for p in parts if isinstance(p, TextPart)), None)
            sink.first_text = text
        if not sink.first_at:
            sink.first_at = turn.created_at
        last = sink.buffer[-1] if sink.buffer else None
        if (
            last is not None
            and turn.merge_key is not None
            and last.merge_key == turn.merge_key
            and last.message.role == turn.role
        ):
            last.parts.extend(parts)
            if turn.finish_reason:
                last.message.finish_reason = turn.finish_reason
            return
        message = Message(
            id=new_id("msg"),
            session_id=sink.session_id,
            role=turn.role,
            created_at=turn.created_at,
            model_id=turn.model if turn.role == "assistant" else None,
            finish_reason=turn.finish_reason,
        )
        sink.buffer.append(_Pending(message, parts, turn.merge_key))
        self.buffered += 1

    def _result(self, result: ToolResult, key: str | None) -> None:
        self.tool_results += 1
        part = self._open_calls.pop(result.call_id, None)
        self.buffered_chars += len(result.output)
        if part is not None:
            part.output = result.output
            part.status.state = "error" if result.is_error else "completed"
            part.status.completed_at = result.created_at
            if result.is_error:
                part.error_message = result.output[:500] or "error"
            return
        self._late.append((result, key))

    # -- writing -----------------------------------------------------------------
    async def _create(self, sink: _Sink) -> None:
        parent = self._sinks.get(self._parent_key) if sink.key == SIDECHAIN else None
        if parent is not None and not parent.created:
            await self._create(parent)
        model = sink.model or self.meta.model or "unknown"
        title_bits = [self.label]
        if sink.key == SIDECHAIN:
            title_bits.append("sub-agent")
        if self.meta.cwd:
            title_bits.append(self.meta.cwd)
        summary = self.meta.title or sink.first_text
        if summary:
            flat = " ".join(summary.split())
            title_bits.append(flat[:_TITLE_CHARS])
        await self.store.create_session(
            SessionRecord(
                id=sink.session_id,
                model=model,
                agent=SIDECHAIN if sink.key == SIDECHAIN else "default",
                parent_id=parent.session_id if parent is not None else None,
                title=" · ".join(title_bits),
                created_at=sink.first_at or 0,
                updated_at=sink.first_at or 0,
            )
        )
        sink.created = True
        self.created_ids.append(sink.session_id)

    def session_ids(self) -> dict[str, str]:
        """Session key (``""`` for the file's own) → session ID, of the sessions kept
        across imports of the file (the file's own and its sidechain)."""
        return {
            (k or ""): s.session_id
            for k, s in self._sinks.items()
            if s.created and k in (None, SIDECHAIN)
        }

    def main_session_id(self) -> str:
        """The file's own session, else the first session created."""
        main = self._sink(None)
        if main.created or not self.created_ids:
            return main.session_id
        return self.created_ids[0]

    def last_buffered_id(self) -> str | None:
        """ID of the newest buffered message (written by the next :meth:`flush`)."""
        for sink in self._sinks.values():
            if sink.buffer:
                return sink.buffer[-1].message.id
        return None

    async def ensure_sessions(self) -> None:
        """Create the sessions that have buffered messages (the file's own if none)."""
        for sink in list(self._sinks.values()):
            if not sink.created and sink.buffer:
                await self._create(sink)
        if not self.created_ids and not any(s.created for s in self._sinks.values()):
            await self._create(self._sink(None))

    async def flush(self) -> None:
        """Write every buffered message, then complete tool calls answered late."""
        await self.ensure_sessions()
        for sink in self._sinks.values():
            if not sink.buffer:
                continue
            batch = []
            for pending in sink.buffer:
                tokens = [_part_tokens(p) for p in pending.parts]
                pending.message.token_estimate = sum(tokens) + _MESSAGE_OVERHEAD
                batch.append(NewMessage(pending.message, pending.parts, tokens))
            appended = await self.store.append_messages(batch)
            for new, landed in zip(batch, appended, strict=True):
                for part, part_id in zip(new.parts, landed.part_ids, strict=True):
                    if isinstance(part, ToolPart) and part.status.state == "running":
                        self._written_calls[part.tool_call_id] = (part_id, sink.session_id)
                        self._open_calls.pop(part.tool_call_id, None)
            self.messages += len(batch)
            sink.buffer.clear()
        self.buffered = 0
        self.buffered_chars = 0
        late, self._late = self._late, []
        for result, key in late:
            await self._complete_late(result, key)

    async def _complete_late(self, result: ToolResult, key: str | None) -> None:
        found = self._written_calls.pop(result.call_id, None)
        if found is None:
            sink = self._sink(key)
            if sink.created:
                try:
                    part_id, _ = await self.store.find_tool_part(sink.session_id, result.call_id)
                    found = (part_id, sink.session_id)
                except PartNotFoundError:
                    found = None
        if found is None:
            self.orphan_results += 1
            return
        await self.store.update_part_status(
            found[0],
            state="error" if result.is_error else "completed",
            output=result.output,
            error_message=(result.output[:500] or "error") if result.is_error else None,
            completed_at=result.created_at,
            token_estimate=heuristic_token_count(result.output) + 8,
        )
