"""The compaction lock row's statements, written once for both backends (the lineage
reads are :class:`~mnesis.store.shared.summaries.BaseSummaries`')."""

from __future__ import annotations

from typing import Any

__all__ = [
    "LOCK_ACQUIRE",
    "LOCK_LIST",
    "LOCK_OWNER",
    "LOCK_RELEASE",
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
