"""The summary, lineage and compaction-lock half of the store facade
(:class:`~mnesis.store.immutable.ImmutableStore`): check, then delegate."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

from mnesis.store.base import StoreBackend
from mnesis.store.checks import check_id, check_ids, check_number, check_optional_id
from mnesis.store.jobs import CompactionQueue
from mnesis.store.lease import LeaseRow
from mnesis.store.record_checks import check_commit
from mnesis.store.records import AppendedMessage, CompactionCommit, SummaryRecord

__all__ = ["SummaryFacade"]


class SummaryFacade(StoreBackend):
    """Summaries, their lineage and the compaction lock, checked then delegated to
    :attr:`backend`."""

    @property
    @abstractmethod
    def backend(self) -> StoreBackend:
        """The backend this facade delegates to."""

    async def commit_compaction(self, commit: CompactionCommit) -> AppendedMessage:
        check_commit(commit)
        return await self.backend.commit_compaction(commit)

    async def get_summaries(self, summary_ids: Sequence[str]) -> list[SummaryRecord]:
        check_ids(summary_ids, "summary_ids")
        return await self.backend.get_summaries(summary_ids)

    async def get_summary(self, summary_id: str) -> SummaryRecord:
        check_id(summary_id, "summary_id")
        return await self.backend.get_summary(summary_id)

    async def get_summary_source_ids(self, summary_id: str) -> list[str]:
        check_id(summary_id, "summary_id")
        return await self.backend.get_summary_source_ids(summary_id)

    async def get_summary_parent_ids(self, summary_id: str) -> list[str]:
        check_id(summary_id, "summary_id")
        return await self.backend.get_summary_parent_ids(summary_id)

    async def acquire_compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float, *, steal_from: str | None = None
    ) -> bool:
        check_id(session_id, "session_id")
        check_id(owner, "owner")
        check_number(ttl_seconds, "ttl_seconds")
        check_optional_id(steal_from, "steal_from")
        return await self.backend.acquire_compaction_lock(
            session_id, owner, ttl_seconds, steal_from=steal_from
        )

    async def compaction_lock_owner(self, session_id: str) -> str | None:
        check_id(session_id, "session_id")
        return await self.backend.compaction_lock_owner(session_id)

    async def release_compaction_lock(self, session_id: str, owner: str) -> None:
        check_id(session_id, "session_id")
        check_id(owner, "owner")
        await self.backend.release_compaction_lock(session_id, owner)

    async def compaction_leases(self) -> list[LeaseRow]:
        return await self.backend.compaction_leases()

    def compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float
    ) -> AbstractAsyncContextManager[None]:
        check_id(session_id, "session_id")
        check_id(owner, "owner")
        check_number(ttl_seconds, "ttl_seconds")
        return self.backend.compaction_lock(session_id, owner, ttl_seconds)

    def compaction_queue(self) -> CompactionQueue | None:
        return self.backend.compaction_queue()

    async def get_summaries_merging(self, summary_id: str) -> list[str]:
        check_id(summary_id, "summary_id")
        return await self.backend.get_summaries_merging(summary_id)

    async def get_leaf_summaries_of_message(self, message_id: str) -> list[str]:
        check_id(message_id, "message_id")
        return await self.backend.get_leaf_summaries_of_message(message_id)

    async def get_source_message_ids_deep(self, summary_id: str) -> list[str]:
        check_id(summary_id, "summary_id")
        return await self.backend.get_source_message_ids_deep(summary_id)

    async def covering_context_summaries(
        self, session_id: str, message_ids: Sequence[str]
    ) -> dict[str, str | None]:
        check_id(session_id, "session_id")
        check_ids(message_ids, "message_ids")
        return await self.backend.covering_context_summaries(session_id, message_ids)

    async def messages_in_context(self, session_id: str, message_ids: Sequence[str]) -> set[str]:
        check_id(session_id, "session_id")
        check_ids(message_ids, "message_ids")
        return await self.backend.messages_in_context(session_id, message_ids)
