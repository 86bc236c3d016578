"""A backend as a small wrapper over named collaborators, the way Django's database
backends are (``connection.ops``, ``connection.features``, ...).

:class:`BackendWrapper` is the engine-neutral half of both backends: it holds the
database handle (and who closes it: the pool that lent the store, or the store itself),
names the collaborators each engine gives it (``store.sessions``, ``store.search``, ...),
each an engine-neutral base with a SQLite and a PostgreSQL subclass
(``store/sqlite/<topic>.py``, ``store/postgres/<topic>.py``), and keeps the methods of the
:class:`~mnesis.store.base.StoreBackend` interface as one-line delegations to them,
written here once. Callers keep calling ``backend.session_stats(...)`` (the contract,
and the facade's delegation to it, stay as they were); a reader who wants the SQL follows
``self.stats`` to the engine's module of that name. What only one engine offers is
reached on its collaborator (``SQLiteStore.batch.append_rows``).

Each collaborator is given the database only (not the store): collaborators do not call
each other or the store, so no state is shared through ``self`` across topics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Literal, Unpack

from mnesis.models.message import MessageWithParts
from mnesis.models.parts import MessagePart
from mnesis.models.tokens import TokenUsage
from mnesis.store import records
from mnesis.store.base import StoreBackend
from mnesis.store.lease import LeaseRow
from mnesis.store.session_stats import BaseStats, SessionStats
from mnesis.store.shared.batch import BaseBatch
from mnesis.store.shared.grep_reads import BaseGrepReads, ContextPlaces, RecentTurn
from mnesis.store.shared.integrity import BaseIntegrity
from mnesis.store.shared.lending import Handle, Lender
from mnesis.store.shared.messages import BaseMessages
from mnesis.store.shared.purge import BasePurge
from mnesis.store.shared.search import BaseSearch
from mnesis.store.shared.sessions import BaseSessions
from mnesis.store.shared.summaries import BaseSummaries

__all__ = ["BackendWrapper"]


class BackendWrapper(StoreBackend, Generic[Handle]):
    """The interface answered by named collaborators (each engine's store sets them)."""

    sessions: BaseSessions[Any]
    """Sessions and file references."""
    messages: BaseMessages[Any]
    """Appends, the permitted changes of a message or part, reads of messages."""
    summaries: BaseSummaries[Any]
    """The context view, compaction commits, summaries, lineage, the compaction lease."""
    batch: BaseBatch[Any]
    """A large batch of new messages in one transaction (``append_batch``)."""
    search: BaseSearch[Any]
    """Ranked full-text search, newest-first scans, replies."""
    grep_reads: BaseGrepReads[Any]
    """``grep``'s reads around its search: where hits stand, the newest turns."""
    purge: BasePurge[Any]
    """Purging a session; import progress."""
    integrity: BaseIntegrity[Any]
    """Snapshots, the engine's own check, the hash chain's check, repairs, backups."""
    stats: BaseStats[Any]
    """Per-session counts (``session_stats``), the bytes the data occupies."""

    def __init__(self, db: Handle, *, pool: Lender | None, pool_key: str) -> None:
        self.db = db
        self.pool = pool
        """The pool that lent this store (None: the store owns :attr:`db`)."""
        self.pool_key = pool_key
        self._released = False

    async def close(self) -> None:
        """Give the store back to its pool (the last store given back closes the
        handle), or close the handle it owns; later calls do nothing."""
        if self._released:
            return
        self._released = True
        if self.pool is not None:
            await self.pool.release(self)
        else:
            await self.db.close()

    # sessions and files ------------------------------------------------------
    async def create_session(self, record: records.SessionRecord) -> None:
        await self.sessions.create_session(record)

    async def get_session(self, session_id: str) -> records.SessionRecord:
        return await self.sessions.get_session(session_id)

    async def list_sessions(
        self, *, limit: int = 100, offset: int = 0
    ) -> list[records.SessionRecord]:
        return await self.sessions.list_sessions(limit=limit, offset=offset)

    async def set_session_status(
        self, session_id: str, status: Literal["active", "closed"]
    ) -> None:
        await self.sessions.set_session_status(session_id, status)

    async def set_session_config(self, session_id: str, config: dict[str, Any]) -> None:
        await self.sessions.set_session_config(session_id, config)

    async def store_file_reference(self, ref: records.FileReference) -> records.FileReference:
        return await self.sessions.store_file_reference(ref)

    async def get_file_reference(self, content_or_file_id: str) -> records.FileReference | None:
        return await self.sessions.get_file_reference(content_or_file_id)

    async def get_file_reference_by_path(self, path: str) -> records.FileReference | None:
        return await self.sessions.get_file_reference_by_path(path)

    # messages --------------------------------------------------------------
    async def append_messages(
        self, batch: Sequence[records.NewMessage]
    ) -> list[records.AppendedMessage]:
        return await self.messages.append_messages(batch)

    async def append_parts(
        self, message_id: str, parts: Sequence[MessagePart], **options: Unpack[records.PartsAppend]
    ) -> list[str]:
        return await self.messages.append_parts(message_id, parts, **options)

    async def update_message_tokens(
        self, message_id: str, **change: Unpack[records.MessageChange]
    ) -> None:
        await self.messages.update_message_tokens(message_id, **change)

    async def update_part_status(
        self, part_id: str, **change: Unpack[records.PartStatusChange]
    ) -> None:
        await self.messages.update_part_status(part_id, **change)

    async def tombstone_parts(
        self,
        parts: Sequence[tuple[str, int, int]],
        message_estimates: Sequence[tuple[str, int]],
    ) -> None:
        await self.messages.tombstone_parts(parts, message_estimates)

    async def get_message(self, message_id: str) -> MessageWithParts:
        return await self.messages.get_message(message_id)

    async def get_messages(
        self, session_id: str, **query: Unpack[records.MessagesQuery]
    ) -> list[MessageWithParts]:
        return await self.messages.get_messages(session_id, **query)

    async def get_messages_by_ids(self, message_ids: Sequence[str]) -> list[MessageWithParts]:
        return await self.messages.get_messages_by_ids(message_ids)

    async def count_messages(self, session_id: str) -> int:
        return await self.messages.count_messages(session_id)

    async def session_token_usage(self, session_id: str) -> TokenUsage:
        return await self.messages.session_token_usage(session_id)

    async def find_tool_part(self, session_id: str, tool_call_id: str) -> tuple[str, str]:
        return await self.messages.find_tool_part(session_id, tool_call_id)

    # stats -----------------------------------------------------------------
    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        return await self.stats.session_stats(session_ids)

    async def used_bytes(self) -> int:
        return await self.stats.used_bytes()

    # search and grep's reads -------------------------------------------------
    async def search_text(self, **search: Unpack[records.TextSearch]) -> list[records.SearchHit]:
        return await self.search.search_text(**search)

    async def scan_text(self, **scan: Unpack[records.TextScan]) -> list[records.SearchHit]:
        return await self.search.scan_text(**scan)

    async def replies_to(self, message_ids: Sequence[str]) -> dict[str, records.SearchHit]:
        return await self.search.replies_to(message_ids)

    async def context_places(
        self, message_ids: Sequence[str], summary_ids: Sequence[str]
    ) -> ContextPlaces:
        return await self.grep_reads.context_places(message_ids, summary_ids)

    async def recent_turns(self, session_ids: Sequence[str], count: int) -> list[RecentTurn]:
        return await self.grep_reads.recent_turns(session_ids, count)

    # integrity -------------------------------------------------------------
    async def list_session_ids(self) -> list[str]:
        return await self.integrity.list_session_ids()

    async def integrity_snapshot(self, session_id: str) -> records.IntegritySnapshot:
        return await self.integrity.integrity_snapshot(session_id)

    async def verify_chain(
        self, session_id: str, expect: bytes | None = None
    ) -> records.ChainReport:
        return await self.integrity.verify_chain(session_id, expect)

    async def engine_check(self, *, full: bool = False) -> records.EngineCheck:
        return await self.integrity.engine_check(full=full)

    async def check_usage(self, session_id: str) -> records.UsageCheck | None:
        return await self.integrity.check_usage(session_id)

    async def forget_usage(self, session_id: str) -> None:
        await self.integrity.forget_usage(session_id)

    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        await self.integrity.replace_context_items(session_id, items)

    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        await self.integrity.add_summary_sources(summary_id, message_ids)

    async def backup_to(self, path: str) -> None:
        await self.integrity.backup_to(path)

    # purge and import progress ---------------------------------------------
    async def purge_session(self, session_id: str) -> records.PurgeReport:
        return await self.purge.purge_session(session_id)

    async def get_import_source(self, source_key: str) -> records.ImportSource | None:
        return await self.purge.get_import_source(source_key)

    async def put_import_source(self, source: records.ImportSource) -> None:
        await self.purge.put_import_source(source)

    # batches ---------------------------------------------------------------
    async def append_batch(
        self, batch: Sequence[records.NewMessage]
    ) -> list[records.AppendedMessage]:
        return await self.batch.append_batch(batch)

    # context, summaries, lineage, the compaction lease ----------------------
    async def get_context_items(
        self, session_id: str, **query: Unpack[records.ContextItemsQuery]
    ) -> list[records.ContextItem]:
        return await self.summaries.get_context_items(session_id, **query)

    async def context_token_total(self, session_id: str) -> int:
        return await self.summaries.context_token_total(session_id)

    async def commit_compaction(self, commit: records.CompactionCommit) -> records.AppendedMessage:
        return await self.summaries.commit_compaction(commit)

    async def get_summaries(self, summary_ids: Sequence[str]) -> list[records.SummaryRecord]:
        return await self.summaries.get_summaries(summary_ids)

    async def get_summary_source_ids(self, summary_id: str) -> list[str]:
        return await self.summaries.get_summary_source_ids(summary_id)

    async def get_summary_parent_ids(self, summary_id: str) -> list[str]:
        return await self.summaries.get_summary_parent_ids(summary_id)

    async def get_summaries_merging(self, summary_id: str) -> list[str]:
        return await self.summaries.get_summaries_merging(summary_id)

    async def get_leaf_summaries_of_message(self, message_id: str) -> list[str]:
        return await self.summaries.get_leaf_summaries_of_message(message_id)

    async def get_source_message_ids_deep(self, summary_id: str) -> list[str]:
        return await self.summaries.get_source_message_ids_deep(summary_id)

    async def covering_context_summaries(
        self, session_id: str, message_ids: Sequence[str]
    ) -> dict[str, str | None]:
        return await self.summaries.covering_context_summaries(session_id, message_ids)

    async def messages_in_context(self, session_id: str, message_ids: Sequence[str]) -> set[str]:
        return await self.summaries.messages_in_context(session_id, message_ids)

    async def acquire_compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float, *, steal_from: str | None = None
    ) -> bool:
        return await self.summaries.acquire_compaction_lock(
            session_id, owner, ttl_seconds, steal_from=steal_from
        )

    async def compaction_lock_owner(self, session_id: str) -> str | None:
        return await self.summaries.compaction_lock_owner(session_id)

    async def release_compaction_lock(self, session_id: str, owner: str) -> None:
        await self.summaries.release_compaction_lock(session_id, owner)

    async def compaction_leases(self) -> list[LeaseRow]:
        return await self.summaries.compaction_leases()
