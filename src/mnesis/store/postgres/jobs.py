"""The compaction queue of a PostgreSQL store: jobs in procrastinate's tables.

Jobs are written with procrastinate's versioned SQL API (``procrastinate_defer_jobs_v1``,
the function its own ``defer`` calls), so a session can queue work without importing
procrastinate; ``mnesis worker`` (:mod:`mnesis.workers`) installs the schema and runs
the jobs. Each job carries the session's ``lock`` and ``queueing_lock``: procrastinate
keeps at most one queued and one running compaction per session.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import psycopg

from mnesis.errors import MnesisStoreError
from mnesis.store.jobs import (
    COMPACTION_TASK,
    DEFAULT_QUEUE,
    CompactionReason,
    JobState,
    compaction_lock_name,
)
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import fetch_one

__all__ = ["PostgresCompactionQueue"]

_DEFER = (
    "SELECT unnest(procrastinate_defer_jobs_v1(ARRAY[ROW(%s, %s, 0, %s, %s, %s::jsonb, NULL)"
    "::procrastinate_job_to_defer_v1]))"
)
_QUEUED = "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'todo'"
_MISSING_SCHEMA = {"42883", "42704", "42P01"}


class PostgresCompactionQueue:
    """Queues compaction jobs of the sessions of one database (``queue`` names the
    procrastinate queue)."""

    def __init__(self, db: PostgresDatabase, queue: str = DEFAULT_QUEUE) -> None:
        self.db = db
        self.queue = queue

    async def request(self, session_id: str, reason: CompactionReason) -> int:
        lock = compaction_lock_name(session_id)
        args = json.dumps(
            {
                "session_id": session_id,
                "reason": reason,
                "requested_at": datetime.now(UTC).isoformat(),
            }
        )

        async def _defer(conn: Conn) -> int:
            for _ in range(3):
                try:
                    row = await fetch_one(
                        conn, _DEFER, (self.queue, COMPACTION_TASK, lock, lock, args)
                    )
                except psycopg.errors.UniqueViolation:
                    row = await fetch_one(conn, _QUEUED, (lock,))
                except psycopg.Error as exc:
                    if exc.sqlstate in _MISSING_SCHEMA:
                        raise MnesisStoreError(
                            f"no job queue in {self.db.location}: start `mnesis worker` "
                            "(or `mnesis worker --setup-only`) once to install it"
                        ) from exc
                    raise
                if row is not None:
                    return int(row[0])
            raise MnesisStoreError(f"could not queue a compaction of {session_id}, retry")

        return await self.db.read(_defer)

    async def state(self, session_id: str) -> JobState | None:
        lock = compaction_lock_name(session_id)

        async def _state(conn: Conn) -> JobState | None:
            try:
                row = await fetch_one(
                    conn,
                    "SELECT bool_or(status = 'doing'), count(*) FROM procrastinate_jobs "
                    "WHERE (queueing_lock = %s OR lock = %s) AND status IN ('todo', 'doing')",
                    (lock, lock),
                )
            except psycopg.errors.UndefinedTable:
                return None
            if row is None or not row[1]:
                return None
            return "running" if row[0] else "queued"

        return await self.db.read(_state)
