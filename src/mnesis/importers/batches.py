"""Turn parsed transcript records into write-ready batches: sessions made on demand,
messages grouped per session, tool calls paired with their results by call ID.

:class:`BatchBuilder` runs on the parsing side of an import (its own thread, see
:mod:`mnesis.importers.pipeline`) and touches no store: :meth:`BatchBuilder.cut` hands
over a :class:`Batch` that :class:`~mnesis.importers.writer.BatchWriter` writes. A tool
call whose result has not arrived when its batch is cut is stored ``running``; the
result, when it comes, is written as a completion of the stored call (the tool lifecycle
is the one mutation the append-only store permits), in this import or a later one.

One API message split over several lines (Claude Code's assistant lines sharing a
``message.id``) is one stored message even when its lines straddle two imports of a
growing file: each batch leaves the last message of each session as its :class:`Tail`
(kept in the import's progress record), and lines that continue it are appended to the
stored message as new parts (:class:`Extension`), as a live session appends parts.
What a cut holds (:class:`Batch`, :class:`Tail`, :class:`Extension`) is defined in
:mod:`mnesis.importers.batch_types` and importable from here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from mnesis.importers.batch_types import SIDECHAIN, Batch, Extension, Tail, part_tokens
from mnesis.importers.light import (
    BuiltPart,
    LightItem,
    LightMessage,
    LightTool,
    part_model,
)
from mnesis.importers.records import (
    Meta,
    ParsedItem,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    is_injected,
)
from mnesis.models.ids import new_id
from mnesis.models.limits import fits_int64
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, TextPart, ToolPart, ToolStatus
from mnesis.store.base import NewMessage, SessionRecord

__all__ = ["SIDECHAIN", "Batch", "BatchBuilder", "Extension", "Tail", "part_tokens"]


_MESSAGE_OVERHEAD = 4
_TITLE_CHARS = 80


def _text_of(part: BuiltPart) -> str | None:
    """The text of a text part (None: reasoning, a tool call)."""
    if isinstance(part, TextPart) or (isinstance(part, Text) and not part.reasoning):
        return part.text
    return None


@dataclass(slots=True)
class _Pending:
    message: Message | LightMessage
    parts: list[BuiltPart]
    merge_key: str | None


@dataclass(slots=True)
class _Sink:
    """One target session: its ID, whether a batch creates it, its uncut messages."""

    key: str | None
    session_id: str
    announced: bool
    buffer: list[_Pending] = field(default_factory=list)
    model: str | None = None
    first_text: str | None = None
    first_at: int = 0
    tail: Tail | None = None
    extension: list[BuiltPart] = field(default_factory=list)
    extension_finish: str | None = None


class BatchBuilder:
    """Collects :class:`ParsedItem` records into :class:`Batch` es."""

    def __init__(
        self,
        *,
        label: str,
        sessions: dict[str, str] | None = None,
        tails: dict[str, Any] | None = None,
        parent_key: str | None = None,
        light: bool = False,
        parent_session: str | None = None,
    ) -> None:
        """``sessions`` maps session keys (``""`` for the file's own) to sessions that an
        earlier import created, ``tails`` those keys to the :meth:`Tail.to_state` of their
        last stored message; ``label`` starts the titles of new sessions. ``light``: the
        batches hold their messages as plain data (:attr:`Batch.light`).
        ``parent_session``: the file is a sub-agent's own transcript (a Claude Code
        ``subagents/agent-*.jsonl``), its session a child of that stored session."""
        self.label = label
        self._light = light
        self._parent_session = parent_session
        self.meta = Meta()
        self._sinks: dict[str | None, _Sink] = {}
        for key, session_id in (sessions or {}).items():
            self._sinks[key or None] = _Sink(key or None, session_id, announced=True)
        for key, state in (tails or {}).items():
            sink = self._sinks.get(key or None)
            if sink is not None:
                sink.tail = Tail.from_state(state)
        self._open_calls: dict[str, ToolPart | LightTool] = {}
        self._late: list[tuple[ToolResult, str | None]] = []
        self._parent_key = parent_key
        self._created: list[str] = []
        self._tool_results = 0
        self.buffered = 0
        """Messages waiting for the next cut."""
        self.buffered_chars = 0
        """Characters of text and tool output waiting for the next cut."""

    # -- collecting --------------------------------------------------------------
    def _sink(self, key: str | None) -> _Sink:
        sink = self._sinks.get(key)
        if sink is None:
            sink = _Sink(key, new_id("sess"), announced=False)
            self._sinks[key] = sink
        return sink

    def add(self, item: ParsedItem) -> None:
        """Take one parsed record (held until :meth:`cut`)."""
        if isinstance(item, Meta):
            for name in ("cwd", "model", "title", "source_id", "chosen_title"):
                value = getattr(item, name)
                if value and not getattr(self.meta, name):
                    setattr(self.meta, name, value)
            return
        sidechain = getattr(item, "sidechain", False) and self._parent_session is None
        key = SIDECHAIN if sidechain else item.session_key
        if isinstance(item, ToolResult):
            self._result(item, key)
            return
        self._turn(item, key)

    def _continues_tail(self, sink: _Sink | None, turn: Turn) -> bool:
        """Whether ``turn`` continues the stored message the session's last batch ended
        with (nothing of the session buffered since)."""
        tail = sink.tail if sink is not None and not sink.buffer else None
        return (
            tail is not None
            and turn.merge_key is not None
            and tail.merge_key == turn.merge_key
            and tail.role == turn.role
        )

    def _turn(self, turn: Turn, key: str | None) -> None:
        sink = self._sink(key)
        pieces = [p for p in turn.parts if isinstance(p, ToolCall) or p.text]
        extends = self._continues_tail(sink, turn)
        if extends and sink.tail is not None and sink.tail.skip:
            skipped = min(sink.tail.skip, len(pieces))
            pieces, sink.tail.skip = pieces[skipped:], sink.tail.skip - skipped
        parts: list[BuiltPart] = []
        for piece in pieces:
            if isinstance(piece, ToolCall):
                call = self._call(piece, turn.created_at)
                self._open_calls[piece.call_id] = call
                parts.append(call)
            else:
                parts.append(piece if self._light else part_model(piece))
                self.buffered_chars += len(piece.text)
        if not parts:
            return
        if extends:
            sink.extension.extend(parts)
            if turn.finish_reason:
                sink.extension_finish = turn.finish_reason
            return
        if turn.model and sink.model is None and turn.role == "assistant":
            sink.model = turn.model
        if sink.first_text is None and turn.role == "user" and not turn.context:
            sink.first_text = next(
                (t for p in parts if (t := _text_of(p)) is not None and not is_injected(t)), None
            )
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
        message = self._message(new_id("msg"), sink.session_id, turn)
        sink.buffer.append(_Pending(message, parts, turn.merge_key))
        self.buffered += 1

    def _call(self, piece: ToolCall, at: int) -> ToolPart | LightTool:
        """The part of a tool call (stored ``running`` unless its result arrives)."""
        name = piece.name or "unknown"
        if self._light and piece.call_id and fits_int64(at):
            return LightTool(name, piece.call_id, piece.input, at)
        # The model path, and in light mode the error it raises for these values.
        status = ToolStatus(state="running", started_at=at)
        return ToolPart(
            tool_name=name, tool_call_id=piece.call_id, input=piece.input, status=status
        )

    def _message(self, message_id: str, session_id: str, turn: Turn) -> Message | LightMessage:
        model = turn.model if turn.role == "assistant" else None
        if self._light and fits_int64(turn.created_at):
            return LightMessage(
                message_id, session_id, turn.role, turn.created_at, model, turn.finish_reason
            )
        # The model path, and in light mode the error it raises for this time.
        return Message(
            id=message_id,
            session_id=session_id,
            role=turn.role,
            created_at=turn.created_at,
            model_id=model,
            finish_reason=turn.finish_reason,
        )

    def _result(self, result: ToolResult, key: str | None) -> None:
        self._tool_results += 1
        part = self._open_calls.pop(result.call_id, None)
        self.buffered_chars += len(result.output)
        if part is not None:
            status = part if isinstance(part, LightTool) else part.status
            part.output = result.output
            status.state = "error" if result.is_error else "completed"
            status.completed_at = result.created_at
            if result.is_error:
                part.error_message = result.output[:500] or "error"
            return
        self._late.append((result, key))

    def starts_message(self, items: list[ParsedItem]) -> bool:
        """Whether ``items`` begin a new message: a cut before them splits none. Items
        without a turn (tool results, metadata) may sit inside one API message split
        over several lines (Codex puts a call's output between its call and the reply)."""
        for item in items:
            if isinstance(item, Turn):
                key = SIDECHAIN if item.sidechain else item.session_key
                sink = self._sinks.get(key)
                if self._continues_tail(sink, item):
                    return False
                last = sink.buffer[-1] if sink is not None and sink.buffer else None
                return (
                    last is None
                    or item.merge_key is None
                    or last.merge_key != item.merge_key
                    or last.message.role != item.role
                )
        return False

    # -- cutting -----------------------------------------------------------------
    def _close_calls(self, parts: list[BuiltPart]) -> None:
        """Forget the calls written ``running``: a result that arrives after the cut
        completes the stored call."""
        if not self._open_calls:  # the usual case: every call so far has its result
            return
        for part in parts:
            if (type(part) is LightTool and part.state == "running") or (
                isinstance(part, ToolPart) and part.status.state == "running"
            ):
                self._open_calls.pop(part.tool_call_id, None)

    def _announce(self, sink: _Sink, out: list[SessionRecord]) -> None:
        parent = self._sinks.get(self._parent_key) if sink.key == SIDECHAIN else None
        if parent is not None and not parent.announced:
            self._announce(parent, out)
        parent_id = parent.session_id if parent is not None else None
        sub_agent = sink.key == SIDECHAIN
        if sink.key is None and self._parent_session is not None:
            parent_id, sub_agent = self._parent_session, True
        model = sink.model or self.meta.model or "unknown"
        title_bits = [self.label]
        if sub_agent:
            title_bits.append("sub-agent")
        if self.meta.cwd:
            title_bits.append(self.meta.cwd)
        if self.meta.chosen_title:
            title_bits.append(" ".join(self.meta.chosen_title.split())[:_TITLE_CHARS])
        summary = self.meta.title or sink.first_text
        if summary:
            title_bits.append(" ".join(summary.split())[:_TITLE_CHARS])
        out.append(
            SessionRecord(
                id=sink.session_id,
                model=model,
                agent=SIDECHAIN if sub_agent else "default",
                parent_id=parent_id,
                title=" · ".join(title_bits),
                created_at=sink.first_at or 0,
                updated_at=sink.first_at or 0,
            )
        )
        sink.announced = True
        self._created.append(sink.session_id)

    def cut(self) -> Batch:
        """Everything collected since the previous cut (no session is created for a
        file that has held no message so far: see :attr:`Batch.empty`)."""
        sessions: list[SessionRecord] = []
        for sink in list(self._sinks.values()):
            if not sink.announced and sink.buffer:
                self._announce(sink, sessions)
        last_id = next((s.buffer[-1].message.id for s in self._sinks.values() if s.buffer), None)
        messages: list[NewMessage] = []
        light: list[LightItem] = []
        extensions: list[Extension] = []
        for sink in self._sinks.values():
            if sink.extension and sink.tail is not None:
                tokens = [part_tokens(p) for p in sink.extension]
                extensions.append(
                    Extension(
                        sink.key or "",
                        sink.tail.message_id,
                        [part_model(p) for p in sink.extension],
                        tokens,
                        sink.extension_finish,
                        sink.tail.role,
                    )
                )
                self._close_calls(sink.extension)
            sink.extension, sink.extension_finish = [], None
            for pending in sink.buffer:
                tokens = [part_tokens(p) for p in pending.parts]
                message = pending.message
                message.token_estimate = sum(tokens) + _MESSAGE_OVERHEAD
                if isinstance(message, LightMessage):
                    light.append((message, pending.parts, tokens))
                else:  # the model path: models only
                    messages.append(
                        NewMessage(message, cast(list[MessagePart], pending.parts), tokens)
                    )
                self._close_calls(pending.parts)
            if sink.buffer:
                last = sink.buffer[-1]
                sink.tail = (
                    None
                    if last.merge_key is None
                    else Tail(last.message.id, last.merge_key, last.message.role)
                )
            sink.buffer = []
        late = []
        for result, key in self._late:
            target = self._sinks.get(key)
            late.append((result, target.session_id if target and target.announced else None))
        main = self._sink(None)
        batch = Batch(
            sessions=sessions,
            messages=messages,
            late=late,
            known_sessions={
                (k or ""): s.session_id
                for k, s in self._sinks.items()
                if s.announced and k in (None, SIDECHAIN)
            },
            created=list(self._created),
            main_session_id=(
                main.session_id if main.announced or not self._created else self._created[0]
            ),
            last_message_id=last_id,
            tool_results=self._tool_results,
            extensions=extensions,
            light=light,
            tails={
                (k or ""): s.tail.to_state()
                for k, s in self._sinks.items()
                if s.tail is not None and s.announced and k in (None, SIDECHAIN)
            },
        )
        self._late, self._tool_results = [], 0
        self.buffered = self.buffered_chars = 0
        return batch
