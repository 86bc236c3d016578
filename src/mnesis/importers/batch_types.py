"""What one cut of an import holds: the :class:`Batch` that
:class:`~mnesis.importers.batches.BatchBuilder` hands over, the :class:`Tail` of each
session's last stored message and the :class:`Extension` parts that continue it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnesis.importers.light import LightItem, LightPart, LightTool
from mnesis.importers.records import Text, ToolResult
from mnesis.models.parts import MessagePart, ReasoningPart, TextPart, ToolPart
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.shared.batch import PreparedRows
from mnesis.tokens.estimator import heuristic_token_count

__all__ = ["SIDECHAIN", "Batch", "Extension", "Tail", "part_tokens"]

SIDECHAIN = "sidechain"
"""Session key of the sub-agent (sidechain) turns of a Claude Code session."""


def part_tokens(part: MessagePart | LightPart) -> int:
    """The token estimate an imported part is stored with."""
    if isinstance(part, (Text, TextPart, ReasoningPart)):  # a tuple: cheaper than a union
        return heuristic_token_count(part.text)
    if isinstance(part, (LightTool, ToolPart)):
        size = heuristic_token_count(part.output or "") + heuristic_token_count(str(part.input))
        return size + 8
    return 0


@dataclass(slots=True)
class Tail:
    """The last stored message of a session, which the next lines may continue."""

    message_id: str
    merge_key: str
    role: str
    skip: int = 0
    """Parts of the continuation already stored (an import interrupted between writing
    an extension and its batch): the next parse leaves them out."""

    def to_state(self) -> dict[str, Any]:
        """The JSON form kept in the import's progress record."""
        return {"id": self.message_id, "key": self.merge_key, "role": self.role, "skip": self.skip}

    @classmethod
    def from_state(cls, value: Any) -> Tail | None:
        """A tail from its JSON form (None for anything else)."""
        if not isinstance(value, dict):
            return None
        message_id, key, role = value.get("id"), value.get("key"), value.get("role")
        if not (isinstance(message_id, str) and isinstance(key, str) and isinstance(role, str)):
            return None
        skip = value.get("skip", 0)
        return cls(message_id, key, role, skip=skip if isinstance(skip, int) and skip > 0 else 0)


@dataclass(slots=True)
class Extension:
    """Parts that continue an already stored message (appended before the batch's
    messages)."""

    session_key: str
    message_id: str
    parts: list[MessagePart]
    tokens: list[int]
    finish_reason: str | None
    role: str = "assistant"
    """The role of the stored message it continues."""


@dataclass(slots=True)
class Batch:
    """One cut of an import: what to write, in order, and where the file stands after it."""

    sessions: list[SessionRecord]
    """Sessions to create before the messages (a sidechain after its parent)."""
    messages: list[NewMessage]
    late: list[tuple[ToolResult, str | None]]
    """Results of calls cut in an earlier batch, with the session to look the call up in
    (None: a session this import never created, so the result is an orphan)."""
    known_sessions: dict[str, str]
    """Session key (``""`` for the file's own) → ID, kept across imports of the file."""
    created: list[str]
    """Every session this import has created so far, in order."""
    main_session_id: str
    last_message_id: str | None
    tool_results: int
    """Tool results parsed since the previous cut."""
    extensions: list[Extension] = field(default_factory=list)
    tails: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Session key → :meth:`Tail.to_state` of its last stored message after this batch."""
    offset: int = 0
    """Byte offset (or JSON item count) just past the last line this batch covers."""
    lines: int = 0
    lines_read: int = 0
    parser_state: dict[str, Any] = field(default_factory=dict)
    """The parser's state just past the last line this batch covers (``Parser.state``)."""
    errors: list[tuple[int, str]] = field(default_factory=list)
    checked: bool = False
    """Whether the parser process already ran the store's batch check on ``messages``."""
    encoded: list[tuple[MessagePart, dict[str, Any]]] = field(default_factory=list)
    """Parts of ``messages`` with the row columns the parser process encoded them to
    (see :func:`~mnesis.store.codec.pre_encoded`)."""
    rows: PreparedRows | None = None
    """The parser process's rows of the messages (then ``messages`` is empty), for the
    backend's ``batch.append_rows``."""
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    """With ``rows``: ``(call ID, part ID, message ID)`` of each tool call stored
    ``running``."""
    light: list[LightItem] = field(default_factory=list)
    """From a builder made with ``light=True``: the messages, as plain data (then
    ``messages`` is empty; see :mod:`mnesis.importers.light`)."""

    @property
    def empty(self) -> bool:
        """Whether the file has no session yet (no message so far): nothing is written,
        not even the import's progress."""
        return not self.created and not self.known_sessions
