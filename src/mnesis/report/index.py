"""The message index a report inlines for its search box and transcript, bounded in size.

The page holds at most ``budget`` characters of message text (default
:data:`DEFAULT_INDEX_CHARS`). Each message contributes its rendered text cut to
``per_message`` characters: ``budget // messages``, clamped to
[:data:`MIN_MESSAGE_CHARS`, :data:`MAX_MESSAGE_CHARS`]. When even the minimum does not fit
every message, the index holds the most recent ``budget // MIN_MESSAGE_CHARS`` messages and
the page says how many earlier ones it left out (``mnesis grep`` / ``mnesis show`` read
them). Compaction points (summaries where they landed, with their span) are always kept:
there is one per summary, and their text is cut to ``per_message`` too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mnesis.errors import InvalidArgumentError
from mnesis.models.message import MessageWithParts
from mnesis.models.render import render_part
from mnesis.retrieval.render import uncompacted

__all__ = [
    "DEFAULT_INDEX_CHARS",
    "MAX_MESSAGE_CHARS",
    "MIN_MESSAGE_CHARS",
    "IndexEntry",
    "MessageIndex",
    "check_budget",
]

DEFAULT_INDEX_CHARS = 8_000_000
MAX_MESSAGE_CHARS = 1_000
MIN_MESSAGE_CHARS = 160


def check_budget(budget: object) -> None:
    """Raise :class:`~mnesis.errors.InvalidArgumentError` unless ``budget`` is an int of
    at least :data:`MIN_MESSAGE_CHARS`."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_MESSAGE_CHARS:
        raise InvalidArgumentError(
            f"the index budget must be an integer of at least {MIN_MESSAGE_CHARS} "
            f"characters, not {budget!r}"
        )


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One row of the transcript: a message, or a compaction point (``role`` is
    ``"compaction"``; ``ordinal`` is then the number of messages before it)."""

    ordinal: int
    """1-based position among the session's messages (summaries' markers not counted)."""
    turn: int
    role: str
    message_id: str
    created_at: int
    text: str
    truncated: bool


@dataclass
class MessageIndex:
    """Collects the inlined rows while the session's messages stream past, in order."""

    messages: int
    """How many messages the session has (summaries' markers not counted)."""
    budget: int = DEFAULT_INDEX_CHARS
    entries: list[IndexEntry] = field(default_factory=list)
    chars: int = 0
    per_message: int = field(init=False)
    first_indexed: int = field(init=False)
    """1-based ordinal of the first message held; earlier ones are left out."""

    def __post_init__(self) -> None:
        check_budget(self.budget)
        share = self.budget // max(1, self.messages)
        self.per_message = min(MAX_MESSAGE_CHARS, max(MIN_MESSAGE_CHARS, share))
        fits = self.budget // self.per_message
        self.first_indexed = max(1, self.messages - fits + 1)

    @property
    def left_out(self) -> int:
        """Messages before :attr:`first_indexed` (not in the page)."""
        return self.first_indexed - 1

    def add_message(self, ordinal: int, turn: int, message: MessageWithParts) -> None:
        """Hold ``message`` (the ``ordinal``-th) if it is within the bound."""
        if ordinal < self.first_indexed:
            return
        text, truncated = _snippet(uncompacted(message), self.per_message)
        self._add(
            IndexEntry(
                ordinal,
                turn,
                message.role,
                message.id,
                message.message.created_at,
                text,
                truncated,
            )
        )

    def add_compaction(self, after: int, turn: int, summary_id: str, text: str, at: int) -> None:
        """A compaction point after the ``after``-th message."""
        flat = " ".join(text.split())
        cut = flat[: self.per_message]
        self._add(IndexEntry(after, turn, "compaction", summary_id, at, cut, len(cut) < len(flat)))

    def _add(self, entry: IndexEntry) -> None:
        self.entries.append(entry)
        self.chars += len(entry.text)


def _snippet(message: MessageWithParts, limit: int) -> tuple[str, bool]:
    """The message's text as rendered for a model (pruned outputs in full), whitespace
    folded, cut to ``limit``;
    renders parts only until ``limit`` is reached."""
    pieces: list[str] = []
    size = 0
    cut = False
    for k, part in enumerate(message.parts):
        rendered = render_part(part)
        if not rendered:
            continue
        head = rendered[: 2 * limit + 64]
        pieces.append(" ".join(head.split()))
        size += len(pieces[-1]) + 1
        if size > limit or len(head) < len(rendered):
            cut = len(head) < len(rendered) or k < len(message.parts) - 1
            break
    text = " ".join(pieces)
    if len(text) > limit:
        return text[:limit], True
    return text, cut
