"""The background-job seam of a store: names shared by whoever queues jobs and the workers.

A backend whose database can hold a job queue (PostgreSQL: ``mnesis_jobs``)
returns a :class:`CompactionQueue` from ``StoreBackend.compaction_queue()``; SQLite
returns ``None``. Sessions in ``compaction.mode = "worker"`` hand their compactions to
it; ``mnesis worker`` (:mod:`mnesis.workers`) runs them.
"""

from __future__ import annotations

from typing import Literal, Protocol

__all__ = [
    "COMPACTION_TASK",
    "DEFAULT_QUEUE",
    "INTEGRITY_TASK",
    "CompactionQueue",
    "CompactionReason",
    "JobState",
    "compaction_lock_name",
]

DEFAULT_QUEUE = "mnesis"
"""The queue compaction and integrity jobs go to unless told otherwise."""
COMPACTION_TASK = "mnesis.compact"
"""Task name of a compaction job (arguments: ``session_id``, ``reason``, ``requested_at``)."""
INTEGRITY_TASK = "mnesis.integrity"
"""Task name of an integrity job (arguments: ``session_id`` or null, ``mode``)."""

CompactionReason = Literal["threshold", "manual", "maintenance"]
JobState = Literal["queued", "running"]


def compaction_lock_name(session_id: str) -> str:
    """The coalescing key of a session's compaction jobs: at most one is active (queued
    or running) per session; requests while it runs make it run once more."""
    return f"mnesis.compact:{session_id}"


class CompactionQueue(Protocol):
    """Where a session asks for a background compaction and watches it."""

    async def request(self, session_id: str, reason: CompactionReason) -> int:
        """Queue a compaction job of the session (or find the one already queued); its id."""
        ...

    async def state(self, session_id: str) -> JobState | None:
        """Whether a compaction job of the session is queued or running (None: neither)."""
        ...
