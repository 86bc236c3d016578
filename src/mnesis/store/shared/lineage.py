"""Summary lineage and the compaction lock in SQL, written once for both backends."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from mnesis.store.shared.sql import DOWN_CTE

__all__ = [
    "LOCK_ACQUIRE",
    "LOCK_LIST",
    "LOCK_OWNER",
    "LOCK_RELEASE",
    "LineageReads",
    "lock_args",
]

LOCK_ACQUIRE = (
    "INSERT INTO compaction_locks (session_id, owner, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
    "expires_at = excluded.expires_at "
    "WHERE compaction_locks.expires_at < ? OR compaction_locks.owner = excluded.owner "
    "OR compaction_locks.owner = ?"
)
"""Take the lock if it is free, expired, ours, or held by ``steal_from`` (one row
changed when taken); values from :func:`lock_args`."""
LOCK_OWNER = "SELECT owner FROM compaction_locks WHERE session_id = ?"
LOCK_RELEASE = "DELETE FROM compaction_locks WHERE session_id = ? AND owner = ?"
LOCK_LIST = "SELECT session_id, owner, expires_at FROM compaction_locks ORDER BY session_id"


def lock_args(
    session_id: str, owner: str, ttl_seconds: float, steal_from: str | None, now: int
) -> tuple[Any, ...]:
    """The values of :data:`LOCK_ACQUIRE`."""
    return (session_id, owner, now + int(ttl_seconds * 1000), now, steal_from)


class LineageReads(ABC):
    """The lineage reads that are one first-column query each (part of both stores)."""

    @abstractmethod
    async def _first_column(self, sql: str, args: Sequence[Any]) -> list[str]:
        """The first column of every row of a read query (``?`` placeholders)."""

    async def get_summary_source_ids(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT message_id FROM summary_messages WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )

    async def get_summary_parent_ids(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )

    async def get_summaries_merging(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT summary_id FROM summary_parents WHERE parent_summary_id = ? "
            "ORDER BY summary_id",
            (summary_id,),
        )

    async def get_leaf_summaries_of_message(self, message_id: str) -> list[str]:
        return await self._first_column(
            "SELECT summary_id FROM summary_messages WHERE message_id = ? ORDER BY summary_id",
            (message_id,),
        )

    async def get_source_message_ids_deep(self, summary_id: str) -> list[str]:
        return await self._first_column(
            f"{DOWN_CTE} SELECT m.id FROM messages m WHERE m.id IN "
            "(SELECT sm.message_id FROM summary_messages sm JOIN down "
            "ON sm.summary_id = down.id) ORDER BY m.seq",
            (summary_id,),
        )
