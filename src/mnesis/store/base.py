"""The store interface every backend implements (:class:`StoreBackend`; its integrity and
maintenance half in :mod:`mnesis.store.base_maintenance`); its records live in
:mod:`mnesis.store.records` and are re-exported here.

Invariants every backend keeps (and enforces in the database with triggers):

* ``messages`` and ``message_parts`` are append-only. The only mutations are
  :meth:`StoreBackend.update_message_tokens` (token counts, cost, finish
  reason) and :meth:`StoreBackend.update_part_status` (tool lifecycle and the
  ``compacted_at`` tombstone).
* Appending a message and its ``context_items`` row happens in one transaction.
* A compaction commit (summary row, lineage, the ``context_items`` swap and the
  compaction marker message) happens in one transaction.

Core logic (context assembly, compaction, retrieval) talks only to
:class:`~mnesis.store.immutable.ImmutableStore`, which checks arguments and delegates
to a backend; never to a driver.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Unpack

from mnesis.errors import SummaryNotFoundError
from mnesis.models.message import Message, MessageWithParts
from mnesis.models.parts import MessagePart
from mnesis.models.tokens import TokenUsage
from mnesis.store.base_maintenance import MaintenanceBackend
from mnesis.store.jobs import CompactionQueue
from mnesis.store.lease import LeaseRow, lease_lock
from mnesis.store.map_runs import MapRunStore
from mnesis.store.records import (
    AppendedMessage,
    CompactionCommit,
    ContextItem,
    ContextItemsQuery,
    FileReference,
    ImportSource,
    IntegritySnapshot,
    MessageChange,
    MessagesQuery,
    NewMessage,
    PartsAppend,
    PartStatusChange,
    PurgeReport,
    SearchFilter,
    SearchHit,
    SessionRecord,
    SummaryRecord,
    TextScan,
    TextSearch,
)
from mnesis.store.session_stats import SessionStats
from mnesis.store.shared.grep_reads import ContextPlaces, RecentTurn
from mnesis.store.vectors import VectorStore

__all__ = [
    "AppendedMessage",
    "CompactionCommit",
    "ContextItem",
    "ContextPlaces",
    "FileReference",
    "ImportSource",
    "IntegritySnapshot",
    "NewMessage",
    "PurgeReport",
    "RecentTurn",
    "SearchFilter",
    "SearchHit",
    "SessionRecord",
    "StoreBackend",
    "SummaryRecord",
]


class StoreBackend(MaintenanceBackend):
    """Async, append-only storage of sessions, messages, summaries and context.

    Every backend (SQLite, PostgreSQL) implements this interface. Backends receive
    arguments already checked by :class:`~mnesis.store.immutable.ImmutableStore`."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the data lives: the SQLite file path or the PostgreSQL URL (no password)."""

    @property
    @abstractmethod
    def map_runs(self) -> MapRunStore:
        """The resumable run state of :class:`~mnesis.operators.AgenticMap`."""

    @property
    def vectors(self) -> VectorStore | None:
        """Embedding vectors of texts and summaries (None: this backend keeps none)."""
        return None

    @abstractmethod
    async def close(self) -> None:
        """Release this store's hold on its database (the pool may keep it open)."""

    # sessions -------------------------------------------------------------
    @abstractmethod
    async def create_session(self, record: SessionRecord) -> None:
        """Insert a session row."""

    @abstractmethod
    async def get_session(self, session_id: str) -> SessionRecord:
        """Return a session; raises :class:`~mnesis.errors.SessionNotFoundError`."""

    @abstractmethod
    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionRecord]:
        """Sessions, newest first."""

    @abstractmethod
    async def set_session_status(
        self, session_id: str, status: Literal["active", "closed"]
    ) -> None:
        """Mark a session active or closed."""

    @abstractmethod
    async def set_session_config(self, session_id: str, config: dict[str, Any]) -> None:
        """Replace the stored configuration of a session (the one workers compact with)."""

    # messages -------------------------------------------------------------
    @abstractmethod
    async def append_messages(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        """Append messages with their parts and context rows in one transaction."""

    async def append_message(
        self,
        message: Message,
        parts: Sequence[MessagePart] = (),
        *,
        part_tokens: Sequence[int] | None = None,
        in_context: bool = True,
    ) -> AppendedMessage:
        """Append one message (and its ``context_items`` row) atomically."""
        return await self._append_one(NewMessage(message, parts, part_tokens, in_context))

    async def _append_one(self, item: NewMessage) -> AppendedMessage:
        """:meth:`append_message` once its arguments are one :class:`NewMessage`."""
        (result,) = await self.append_messages([item])
        return result

    async def append_batch(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        """Append a large batch (a transcript import's) in one transaction: the same rows
        :meth:`append_messages` writes, inserted with one statement execution per table.
        A backend without such a path appends through :meth:`append_messages`."""
        return await self.append_messages(batch)

    @abstractmethod
    async def append_parts(
        self, message_id: str, parts: Sequence[MessagePart], **options: Unpack[PartsAppend]
    ) -> list[str]:
        """Append parts to an existing message in one transaction; returns their IDs
        (see :class:`~mnesis.store.records.PartsAppend`)."""

    async def append_part(
        self, message_id: str, part: MessagePart, *, token_estimate: int = 0
    ) -> str:
        """Append one part to an existing message; returns the part ID."""
        (part_id,) = await self.append_parts(message_id, [part], part_tokens=[token_estimate])
        return part_id

    @abstractmethod
    async def update_message_tokens(self, message_id: str, **change: Unpack[MessageChange]) -> None:
        """The one permitted mutation of a message row."""

    @abstractmethod
    async def update_part_status(self, part_id: str, **change: Unpack[PartStatusChange]) -> None:
        """The one permitted mutation of a part: tool lifecycle and tombstone (see
        :class:`~mnesis.store.records.PartStatusChange`)."""

    @abstractmethod
    async def tombstone_parts(
        self,
        parts: Sequence[tuple[str, int, int]],
        message_estimates: Sequence[tuple[str, int]],
    ) -> None:
        """Prune in one transaction: ``(part_id, compacted_at, token_estimate)`` tombstones
        and the new ``(message_id, token_estimate)`` of the messages holding them."""

    @abstractmethod
    async def get_message(self, message_id: str) -> MessageWithParts:
        """One message with its parts; raises :class:`~mnesis.errors.MessageNotFoundError`."""

    @abstractmethod
    async def get_messages(
        self, session_id: str, **query: Unpack[MessagesQuery]
    ) -> list[MessageWithParts]:
        """Messages of a session in order (``seq > after_seq``)."""

    @abstractmethod
    async def get_messages_by_ids(self, message_ids: Sequence[str]) -> list[MessageWithParts]:
        """Messages with parts for the given IDs, in the order given (missing IDs skipped)."""

    @abstractmethod
    async def count_messages(self, session_id: str) -> int:
        """Number of stored messages of a session (summaries included)."""

    @abstractmethod
    async def session_token_usage(self, session_id: str) -> TokenUsage:
        """Sum of recorded model token usage over a session."""

    @abstractmethod
    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        """Counts of each session (of every session when ``session_ids`` is None),
        computed by aggregate queries; an unknown ID gets zero counts."""

    @abstractmethod
    async def find_tool_part(self, session_id: str, tool_call_id: str) -> tuple[str, str]:
        """``(part_id, message_id)`` of a tool call; raises ``PartNotFoundError``."""

    # context and summaries ------------------------------------------------
    @abstractmethod
    async def get_context_items(
        self, session_id: str, **query: Unpack[ContextItemsQuery]
    ) -> list[ContextItem]:
        """The ordered context view (optionally one page of it; see
        :class:`~mnesis.store.records.ContextItemsQuery`)."""

    @abstractmethod
    async def context_token_total(self, session_id: str) -> int:
        """Sum of the token estimates of the current context items."""

    @abstractmethod
    async def commit_compaction(self, commit: CompactionCommit) -> AppendedMessage:
        """Write a summary, its lineage, the context swap and the marker atomically."""

    @abstractmethod
    async def get_summaries(self, summary_ids: Sequence[str]) -> list[SummaryRecord]:
        """Summaries for the IDs given, in that order (missing IDs skipped)."""

    async def get_summary(self, summary_id: str) -> SummaryRecord:
        """One summary; raises :class:`~mnesis.errors.SummaryNotFoundError`."""
        found = await self.get_summaries([summary_id])
        if not found:
            raise SummaryNotFoundError(summary_id)
        return found[0]

    @abstractmethod
    async def get_summary_source_ids(self, summary_id: str) -> list[str]:
        """Message IDs a leaf summary covers, in order."""

    @abstractmethod
    async def get_summary_parent_ids(self, summary_id: str) -> list[str]:
        """Summary IDs a condensed summary merges, in order."""

    @abstractmethod
    async def acquire_compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float, *, steal_from: str | None = None
    ) -> bool:
        """Take the database-level compaction lease of a session (False if held).

        ``steal_from`` takes over a lease held by that owner (known to be dead)."""

    @abstractmethod
    async def compaction_lock_owner(self, session_id: str) -> str | None:
        """The owner of the session's compaction lease, if any (expired or not)."""

    @abstractmethod
    async def release_compaction_lock(self, session_id: str, owner: str) -> None:
        """Release the lock if ``owner`` holds it."""

    async def compaction_leases(self) -> list[LeaseRow]:
        """Every compaction lease row (expired or not), for ``mnesis check``; empty on a
        backend whose lock is not a row (PostgreSQL's advisory lock)."""
        return []

    def compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float
    ) -> AbstractAsyncContextManager[None]:
        """Hold the session's compaction lock for a ``async with`` block; raises
        :class:`~mnesis.errors.CompactionLockedError` at once if another compactor holds
        it. The default is the lease row (``*_compaction_lock``); PostgreSQL overrides it
        with an advisory lock."""
        return lease_lock(self, session_id, owner, ttl_seconds)

    def compaction_queue(self) -> CompactionQueue | None:
        """The database's background compaction queue, if this backend has one."""
        return None

    @abstractmethod
    async def get_summaries_merging(self, summary_id: str) -> list[str]:
        """IDs of the condensed summaries that merged ``summary_id``."""

    @abstractmethod
    async def get_leaf_summaries_of_message(self, message_id: str) -> list[str]:
        """IDs of the leaf summaries that cover a message."""

    @abstractmethod
    async def get_source_message_ids_deep(self, summary_id: str) -> list[str]:
        """Every message a summary covers, through all levels, in conversation order."""

    @abstractmethod
    async def covering_context_summaries(
        self, session_id: str, message_ids: Sequence[str]
    ) -> dict[str, str | None]:
        """For each message: the summary in the current context that covers it (None if
        the message is in the context raw, or not covered)."""

    @abstractmethod
    async def messages_in_context(self, session_id: str, message_ids: Sequence[str]) -> set[str]:
        """The subset of ``message_ids`` that are raw items of the session's context."""

    # search and grep's reads around it ------------------------------------
    @abstractmethod
    async def search_text(self, **search: Unpack[TextSearch]) -> list[SearchHit]:
        """Full-text search, best rank first (the backend renders ``query`` in its syntax).

        Message hits rank conversation text above tool input/output; ``rank`` is lower
        for better hits and comparable between the scopes of one backend."""

    @abstractmethod
    async def scan_text(self, **scan: Unpack[TextScan]) -> list[SearchHit]:
        """Stored texts newest first, one page (for regex search)."""

    @abstractmethod
    async def replies_to(self, message_ids: Sequence[str]) -> dict[str, SearchHit]:
        """For each message, the first text part of the next conversation message of its
        session (the reply), as a search hit with its context; messages without one
        are left out."""

    @abstractmethod
    async def context_places(
        self, message_ids: Sequence[str], summary_ids: Sequence[str]
    ) -> ContextPlaces:
        """Where each message and summary stands in its own session's current context:
        an item of it, or (messages) covered by which of its summaries; one read."""

    @abstractmethod
    async def recent_turns(self, session_ids: Sequence[str], count: int) -> list[RecentTurn]:
        """The non-summary messages among the newest ``count`` of each session, by
        session then in conversation order; one read."""

    # files ----------------------------------------------------------------
    @abstractmethod
    async def store_file_reference(self, ref: FileReference) -> FileReference:
        """Insert a file reference; returns the existing one for known content."""

    @abstractmethod
    async def get_file_reference(self, content_or_file_id: str) -> FileReference | None:
        """Look a file reference up by content ID or file ID."""

    async def get_file_reference_by_path(self, path: str) -> FileReference | None:
        """The newest file reference recorded for ``path``, or ``None`` (0.4.0's lookup)."""
        raise NotImplementedError(f"{type(self).__name__} cannot look references up by path")
