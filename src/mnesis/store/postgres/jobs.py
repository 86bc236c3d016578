"""The compaction queue of a PostgreSQL store: rows of ``mnesis_jobs``.

``mnesis worker`` (:mod:`mnesis.workers`, which installs the table) runs the jobs. A job
is *coalesced* per session: at most one row per ``coalesce_key`` is active (``queued``
or ``running``; a partial unique index says so), and a request that finds one reuses
it in the same statement (``INSERT ... ON CONFLICT DO UPDATE``):

* a ``queued`` job stays as it is (a ``manual`` request makes it manual);
* a ``running`` job is marked ``again``: when it finishes it goes back to ``queued``
  instead of ``succeeded``, so turns recorded while it ran are compacted too.

So there is never a second row a recovery or a retry could collide with: a stalled
job goes back to ``queued`` in place. Each request also notifies the channel
``mnesis_jobs`` (workers ``LISTEN`` to it; they poll besides).
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

__all__ = ["JOBS_CHANNEL", "REQUEST_SQL", "STALE_HEARTBEAT_SECONDS", "PostgresCompactionQueue"]

JOBS_CHANNEL = "mnesis_jobs"
"""The ``NOTIFY`` channel a request signals (the payload is the job's queue)."""

REQUEST_SQL = (
    "WITH job AS (INSERT INTO mnesis_jobs (queue, task, coalesce_key, args) "
    "VALUES (%(queue)s, %(task)s, %(key)s, %(args)s::jsonb) "
    "ON CONFLICT (coalesce_key) WHERE status IN ('queued', 'running') DO UPDATE SET "
    "again = mnesis_jobs.again OR mnesis_jobs.status = 'running', "
    "args = CASE WHEN excluded.args->>'reason' = 'manual' "
    'THEN mnesis_jobs.args || \'{"reason": "manual"}\'::jsonb ELSE mnesis_jobs.args END, '
    "updated_at = now() RETURNING id) "
    f"SELECT id, pg_notify('{JOBS_CHANNEL}', %(queue)s) FROM job"
)
"""Queue a job or reuse the session's active one; returns its id (parameters ``queue``,
``task``, ``key``, ``args``: JSON text)."""

STALE_HEARTBEAT_SECONDS = 60.0
"""A running job whose worker sent no heartbeat for this long reads as ``queued`` to a
waiting turn (its worker is gone; the turn compacts inline after its pickup wait
rather than wait for the run's whole bound). Twice the workers' default
``--stalled-after``."""

_STATE = (
    "SELECT CASE WHEN status = 'running' AND GREATEST(heartbeat_at, pg_postmaster_start_time())"
    " < now() - make_interval(secs => %s) THEN 'queued' ELSE status END "
    "FROM mnesis_jobs WHERE coalesce_key = %s AND status IN ('queued', 'running') LIMIT 1"
)
_MISSING_SCHEMA = {"42883", "42704", "42P01"}


class PostgresCompactionQueue:
    """Queues compaction jobs of the sessions of one database (``queue`` names the
    worker queue)."""

    def __init__(self, db: PostgresDatabase, queue: str = DEFAULT_QUEUE) -> None:
        self.db = db
        self.queue = queue

    def _missing(self, exc: psycopg.Error) -> MnesisStoreError | None:
        if exc.sqlstate in _MISSING_SCHEMA:
            return MnesisStoreError(
                f"no job queue in {self.db.location}: start `mnesis worker` "
                "(or `mnesis worker --setup-only`) once to install it"
            )
        return None

    async def request(self, session_id: str, reason: CompactionReason) -> int:
        args = json.dumps(
            {
                "session_id": session_id,
                "reason": reason,
                "requested_at": datetime.now(UTC).isoformat(),
            }
        )
        params = {
            "queue": self.queue,
            "task": COMPACTION_TASK,
            "key": compaction_lock_name(session_id),
            "args": args,
        }

        async def _request(conn: Conn) -> int:
            try:
                cur = await conn.execute(REQUEST_SQL, params)
                row = await cur.fetchone()
            except psycopg.Error as exc:
                missing = self._missing(exc)
                if missing is not None:
                    raise missing from exc
                raise
            if row is None:
                raise MnesisStoreError(f"could not queue a compaction of {session_id}, retry")
            return int(row[0])

        return await self.db.read(_request)

    async def state(self, session_id: str) -> JobState | None:
        key = compaction_lock_name(session_id)

        async def _state(conn: Conn) -> JobState | None:
            try:
                row = await fetch_one(conn, _STATE, (STALE_HEARTBEAT_SECONDS, key))
            except psycopg.errors.UndefinedTable:
                return None
            if row is None:
                return None
            return "running" if row[0] == "running" else "queued"

        return await self.db.read(_state)
