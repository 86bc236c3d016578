"""The records the store reads and writes (rows as dataclasses), shared by the
:class:`~mnesis.store.base.StoreBackend` interface, the facade and both backends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, ToolState
from mnesis.models.summary import FileReference, SummaryRecord
from mnesis.models.tokens import TokenUsage
from mnesis.store.search_query import SearchQuery

__all__ = [
    "AppendedMessage",
    "ChainBreak",
    "ChainHead",
    "ChainReport",
    "CompactionCommit",
    "ContextItem",
    "ContextItemsQuery",
    "EngineCheck",
    "FileReference",
    "ImportSource",
    "IntegritySnapshot",
    "MessageChange",
    "MessagesQuery",
    "NewMessage",
    "PartStatusChange",
    "PartsAppend",
    "PurgeReport",
    "SearchFilter",
    "SearchHit",
    "SessionRecord",
    "SummaryRecord",
    "TextScan",
    "TextSearch",
    "UsageCheck",
]


@dataclass(slots=True)
class EngineCheck:
    """What the database engine's own consistency check ran, found and could not run."""

    problems: list[str] = field(default_factory=list)
    """Damage found, one line each (empty: none)."""
    ran: list[str] = field(default_factory=list)
    """The checks that ran."""
    unavailable: list[str] = field(default_factory=list)
    """The checks that could not run here, each with the reason (not the same as ok)."""


@dataclass(slots=True)
class SessionRecord:
    """One row of ``sessions``."""

    id: str
    model: str
    agent: str = "default"
    parent_id: str | None = None
    system_prompt: str = ""
    title: str | None = None
    status: Literal["active", "closed"] = "active"
    created_at: int = 0
    updated_at: int = 0
    config: dict[str, Any] | None = None
    """The session's configuration (without the store section), as created."""


@dataclass(slots=True)
class NewMessage:
    """A message to append, with its parts and their token estimates."""

    message: Message
    parts: Sequence[MessagePart] = ()
    part_tokens: Sequence[int] | None = None
    in_context: bool = True


@dataclass(slots=True, frozen=True)
class AppendedMessage:
    """Where an appended message landed."""

    message_id: str
    seq: int
    position: int | None
    part_ids: tuple[str, ...]


@dataclass(slots=True, frozen=True)
class ContextItem:
    """One row of the ordered ``context_items`` view."""

    position: int
    item_type: Literal["message", "summary"]
    item_id: str
    tokens: int
    role: str | None = None


@dataclass(slots=True)
class CompactionCommit:
    """Everything one compaction round writes, atomically.

    ``replaced`` lists the ``(position, item_id)`` pairs the summary replaces; the
    commit fails with :class:`~mnesis.errors.CompactionLockedError` if any of them
    changed since they were read (another compactor won the race).
    """

    summary: SummaryRecord
    source_message_ids: Sequence[str]
    parent_summary_ids: Sequence[str]
    replaced: Sequence[tuple[int, str]]
    context_tokens: int
    marker: NewMessage


@dataclass(slots=True)
class SearchHit:
    """A stored text that matched a search: a message part or a summary."""

    kind: Literal["message", "summary"]
    id: str
    """Message ID or summary ID."""
    session_id: str
    text: str
    created_at: int
    part_id: str | None = None
    role: str | None = None
    rank: float = 0.0
    key: int = 0
    """Backend row key; ``scan_text`` pages continue below it."""
    tool_name: str | None = None
    """For a tool part: the tool's name (retrieval hides its own ``lcm_*`` tools)."""
    context: str | None = None
    """What the index holds beside the text: speaker and date, then the previous
    conversation turns (``role: text``, newest first), one per line."""


@dataclass(slots=True)
class SearchFilter:
    """Restrictions shared by full-text and regex searches."""

    session_ids: Sequence[str] | None = None
    """None: every session (only for explicitly cross-session callers)."""
    since: int | None = None
    until: int | None = None
    under_summary: str | None = None
    """Only messages covered (at any depth) by this summary."""


@dataclass(slots=True)
class IntegritySnapshot:
    """Raw lineage and context rows of one session, for the integrity checker."""

    session_id: str
    context: list[tuple[int, str, str | None, str | None]]
    """``(position, item_type, message_id, summary_id)`` in position order."""
    messages: list[tuple[str, int, str, bool, int]]
    """``(id, seq, role, is_summary, token_estimate)`` in seq order."""
    summaries: list[tuple[str, str, list[str], str | None, str | None]]
    """``(id, kind, file_ids, span_start_message_id, span_end_message_id)``."""
    summary_messages: list[tuple[str, str]]
    """``(summary_id, message_id)`` edges."""
    summary_parents: list[tuple[str, str]]
    """``(summary_id, merged_summary_id)`` edges."""
    known_file_ids: set[str]
    missing_context_targets: list[int]
    """Positions whose message or summary row does not exist."""


@dataclass(slots=True)
class ImportSource:
    """How far a transcript file has been imported (one row of ``import_sources``).

    ``byte_offset``/``lines`` mark the end of the last fully imported line;
    ``fingerprint`` identifies the file's beginning, so a rewritten file is not
    mistaken for a grown one; ``state`` is the importer's own resumption state."""

    source_key: str
    format: str
    path: str
    session_id: str
    byte_offset: int = 0
    lines: int = 0
    fingerprint: str = ""
    messages: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    updated_at: int = 0


@dataclass(slots=True, frozen=True)
class PurgeReport:
    """What :meth:`StoreBackend.purge_session` removed: rows per table, and the sessions."""

    session_ids: tuple[str, ...]
    rows: dict[str, int]


class MessageChange(TypedDict, total=False):
    """The permitted changes of a message row (``update_message_tokens`` keywords)."""

    tokens: TokenUsage | None
    cost: float | None
    finish_reason: str | None
    token_estimate: int | None


class PartsAppend(TypedDict, total=False):
    """What ``append_parts`` takes besides the parts: their token estimates and the
    message's new ``tokens``, ``finish_reason`` and ``token_estimate``, written in the same
    transaction (finishing a streamed turn is one atomic write)."""

    part_tokens: Sequence[int] | None
    tokens: TokenUsage | None
    finish_reason: str | None
    token_estimate: int | None


class MessagesQuery(TypedDict, total=False):
    """Which messages of a session to read (``get_messages`` keywords): with or without
    ``include_summaries`` (default with), those with ``seq > after_seq``, at most ``limit``."""

    include_summaries: bool
    after_seq: int
    limit: int | None


class PartStatusChange(TypedDict, total=False):
    """The permitted changes of a part (``update_part_status`` keywords): its tool
    lifecycle, the ``compacted_at`` tombstone, and ``message_token_estimate``, the owning
    message's new estimate, written in the same transaction."""

    state: ToolState | None
    compacted_at: int | None
    output: str | None
    error_message: str | None
    started_at: int | None
    completed_at: int | None
    token_estimate: int | None
    message_token_estimate: int | None


class ContextItemsQuery(TypedDict, total=False):
    """Which context items of a session to read (``get_context_items`` keywords): only
    one ``item_type``, ``newest_first``, only those ``before_position``, at most ``limit``."""

    item_type: Literal["message", "summary"] | None
    newest_first: bool
    before_position: int | None
    limit: int | None


class _RequiredTextSearch(TypedDict):
    query: SearchQuery
    scope: Literal["messages", "summaries"]
    where: SearchFilter
    limit: int


class TextScan(TypedDict):
    """A page of stored texts, newest first (``scan_text`` keywords)."""

    scope: Literal["messages", "summaries"]
    where: SearchFilter
    before_key: int | None
    limit: int


class TextSearch(_RequiredTextSearch, total=False):
    """A full-text search (``search_text`` keywords); ``offset`` defaults to 0."""

    offset: int


@dataclass(slots=True)
class ChainHead:
    """Where a session's hash chain stands (see ``docs/integrity.md``): record
    :attr:`head` elsewhere to detect a later rewrite of the whole chain."""

    session_id: str
    links: int
    """How many links the chain has (one per message, part, settled tool result and
    summary written)."""
    head: str
    """The newest link's hash, hex (empty: no link yet)."""
    last_seq: int
    """The session's highest message ``seq``."""
    migrated_links: int = 0
    """Links computed by the m011 migration from rows written before it (they prove
    the rows did not change since the migration, not since they were written)."""


@dataclass(slots=True)
class ChainBreak:
    """The first link of a chain that does not match the rows it covers."""

    link: int
    kind: str
    row_id: str
    detail: str


@dataclass(slots=True)
class ChainReport:
    """A session's chain, checked: its head and the first broken link (None: intact)."""

    head: ChainHead
    broken: ChainBreak | None = None
    unchained: list[str] = field(default_factory=list)
    """IDs of stored rows of the session that no link covers (written around the
    store)."""
    available: bool = True
    """False when the database has no chain yet (not migrated to m011; read-only)."""
    expected_link: int | None = None
    """With an expected head: the link whose stored hash it is (None: no link's), so a
    head recorded earlier is found again after the session grew."""

    @property
    def intact(self) -> bool:
        """Every link matches its row and every row has a link."""
        return self.available and self.broken is None and not self.unchained


@dataclass(frozen=True, slots=True)
class UsageCheck:
    """A session's kept usage sums (``session_usage``, m015) beside a fresh sum of its
    messages' usage up to the same message; each as ``(input, output, cache_read,
    cache_write, total)``."""

    upto_seq: int
    kept: tuple[int, ...]
    fresh: tuple[int, ...]

    @property
    def matches(self) -> bool:
        """The kept sums are what the messages sum to now."""
        return self.kept == self.fresh
