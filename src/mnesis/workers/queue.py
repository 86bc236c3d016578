"""A worker's side of ``mnesis_jobs``: claim, heartbeat, finish, release, recover.

Every statement is one atomic ``UPDATE`` on the job's own row, fenced by the worker's
lease token (``lease``, new for each worker process): a worker whose job was taken
back (its heartbeat looked dead) changes nothing when it finishes. Claiming takes the
oldest ready row with ``FOR UPDATE SKIP LOCKED``, so workers never wait for each other.

Connections come from a ``psycopg_pool`` pool that checks each connection before
lending it, so a restarted or failed-over server costs a reconnect, not an error in a
job; while the server is down every call raises, and the caller retries with backoff.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from mnesis.store.jobs import COMPACTION_TASK

__all__ = ["ClaimedJob", "StalledJob", "WorkerQueue"]

Conn = psycopg.AsyncConnection[Any]

_CLAIM = """
UPDATE mnesis_jobs SET status = 'running', worker = %(worker)s, lease = %(lease)s,
    heartbeat_at = now(), attempts = attempts + 1, again = false, updated_at = now()
WHERE id = (
    SELECT id FROM mnesis_jobs
    WHERE status = 'queued' AND queue = ANY(%(queues)s) AND run_after <= now()
    ORDER BY run_after, id LIMIT 1 FOR UPDATE SKIP LOCKED
)
RETURNING id, task, args, attempts, failures
"""
_HEARTBEAT = (
    "UPDATE mnesis_jobs SET heartbeat_at = now() "
    "WHERE lease = %s AND status = 'running' AND id = ANY(%s) RETURNING id"
)
_SUCCEEDED = """
UPDATE mnesis_jobs SET status = CASE WHEN again THEN 'queued' ELSE 'succeeded' END,
    again = false, failures = 0, lease = NULL, run_after = now(), last_error = NULL,
    updated_at = now()
WHERE id = %(id)s AND lease = %(lease)s AND status = 'running'
RETURNING status
"""
_FAILED = """
UPDATE mnesis_jobs SET
    status = CASE WHEN %(final)s OR failures + %(count)s >= %(max)s
        THEN 'failed' ELSE 'queued' END,
    again = false, failures = failures + %(count)s, lease = NULL, last_error = %(error)s,
    run_after = now() + make_interval(secs => %(delay)s), updated_at = now()
WHERE id = %(id)s AND lease = %(lease)s AND status = 'running'
RETURNING status
"""
_RELEASED = """
UPDATE mnesis_jobs SET status = 'queued', lease = NULL, run_after = now(), updated_at = now()
WHERE id = %(id)s AND lease = %(lease)s AND status = 'running'
RETURNING status
"""
_STALLED = """
SELECT id, task, args->>'session_id', worker, lease FROM mnesis_jobs
WHERE status = 'running'
  AND GREATEST(heartbeat_at, pg_postmaster_start_time()) < now() - make_interval(secs => %s)
ORDER BY id LIMIT 100
"""
_RECOVER = """
UPDATE mnesis_jobs SET
    status = CASE WHEN failures + 1 >= %(max)s THEN 'failed' ELSE 'queued' END,
    failures = failures + 1, recovered = recovered + 1, lease = NULL, again = false,
    run_after = now(), last_error = %(error)s, updated_at = now()
WHERE id = %(id)s AND lease = %(lease)s AND status = 'running'
  AND GREATEST(heartbeat_at, pg_postmaster_start_time()) < now() - make_interval(secs => %(secs)s)
RETURNING status
"""
_ATTEMPT = """
INSERT INTO mnesis_job_attempts (job_id, attempt, task, worker, status, error, result)
VALUES (%(id)s, %(attempt)s, %(task)s, %(worker)s, %(status)s, %(error)s, %(result)s)
ON CONFLICT (job_id, attempt) DO UPDATE SET status = excluded.status,
    error = excluded.error, result = excluded.result,
    finished_at = CASE WHEN excluded.status = 'running' THEN NULL ELSE now() END
"""
_LOST = (
    "UPDATE mnesis_job_attempts SET status = 'lost', finished_at = now(), error = %s "
    "WHERE job_id = %s AND status = 'running'"
)


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job this worker took: run it, then finish or release it."""

    id: int
    task: str
    args: dict[str, Any]
    attempt: int
    """Runs of this job so far, this one included."""
    failures: int
    """Failed or lost runs since its last success."""

    @property
    def session_id(self) -> str | None:
        """The session of the job (None: an integrity job over every session)."""
        value = self.args.get("session_id")
        return None if value is None else str(value)

    @property
    def is_compaction(self) -> bool:
        """True for a compaction job."""
        return self.task == COMPACTION_TASK


@dataclass(frozen=True, slots=True)
class StalledJob:
    """A running job whose worker sent no heartbeat for the stalled-after time."""

    id: int
    task: str
    session_id: str | None
    worker: str | None
    lease: str | None


class WorkerQueue:
    """The queue of one database, as one worker process (``name``, ``lease``) sees it."""

    def __init__(
        self, url: str, *, name: str, lease: str, max_connections: int, reconnect_seconds: float
    ) -> None:
        self.name = name
        self.lease = lease
        self.pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs={"autocommit": True, "application_name": "mnesis-worker"},
            check=AsyncConnectionPool.check_connection,
            timeout=10.0,
            reconnect_timeout=reconnect_seconds,
            open=False,
            name="mnesis-worker",
        )

    async def open(self) -> None:
        """Start the pool (connections are made in the background, retried while the
        server is down)."""
        await self.pool.open(wait=False)

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()

    async def _rows(self, sql: str, params: Any) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall()) if cur.description else []

    async def claim(self, queues: list[str]) -> ClaimedJob | None:
        """Take the oldest ready job of ``queues``, if any."""
        rows = await self._rows(
            _CLAIM, {"worker": self.name, "lease": self.lease, "queues": queues}
        )
        if not rows:
            return None
        job_id, task, args, attempt, failures = rows[0]
        return ClaimedJob(int(job_id), str(task), dict(args or {}), int(attempt), int(failures))

    async def heartbeat(self, job_ids: list[int]) -> set[int]:
        """Refresh the heartbeat of this worker's running ``job_ids``; the ids still ours."""
        rows = await self._rows(_HEARTBEAT, (self.lease, job_ids))
        return {int(r[0]) for r in rows}

    async def succeeded(self, job: ClaimedJob) -> str | None:
        """Mark a run done: ``succeeded``, or ``queued`` again when it was requested while
        it ran. None: the job is no longer ours (taken back from this worker)."""
        return await self._status(_SUCCEEDED, {"id": job.id, "lease": self.lease})

    async def failed(
        self,
        job: ClaimedJob,
        error: str,
        *,
        final: bool,
        delay: float,
        max_attempts: int,
        counted: bool = True,
    ) -> str | None:
        """Mark a run failed: ``queued`` again after ``delay`` seconds, or ``failed`` when
        ``final`` or after ``max_attempts`` counted failures (a lost connection is not
        counted); None if no longer ours."""
        params = {
            "id": job.id,
            "lease": self.lease,
            "final": final,
            "count": 1 if counted else 0,
            "max": max_attempts,
            "error": error,
            "delay": delay,
        }
        return await self._status(_FAILED, params)

    async def release(self, job: ClaimedJob) -> str | None:
        """Put a job this worker will not finish back in the queue (no failure counted)."""
        return await self._status(_RELEASED, {"id": job.id, "lease": self.lease})

    async def _status(self, sql: str, params: dict[str, Any]) -> str | None:
        rows = await self._rows(sql, params)
        return str(rows[0][0]) if rows else None

    async def stalled(self, stalled_after: float) -> list[StalledJob]:
        """Running jobs with no heartbeat for ``stalled_after`` seconds (counted from the
        server's start when it restarted since: its workers had no way to beat)."""
        rows = await self._rows(_STALLED, (stalled_after,))
        return [StalledJob(int(r[0]), str(r[1]), r[2], r[3], r[4]) for r in rows]

    async def recover(self, job: StalledJob, stalled_after: float, max_attempts: int) -> str | None:
        """Take a stalled job back: ``queued`` (or ``failed`` after ``max_attempts`` lost
        or failed runs); None if it is no longer stalled (its worker beat, or another
        worker recovered it first)."""
        error = f"worker {job.worker} sent no heartbeat for {stalled_after:g} s; job taken back"
        status = await self._status(
            _RECOVER,
            {
                "id": job.id,
                "lease": job.lease,
                "max": max_attempts,
                "error": error,
                "secs": stalled_after,
            },
        )
        if status is not None:
            await self._rows(_LOST, (error, job.id))
        return status

    async def record_attempt(
        self,
        job: ClaimedJob,
        status: str,
        error: str | None = None,
        result: dict[str, Any] | None = None,
    ) -> None:
        """Write (or update) the ``mnesis_job_attempts`` row of this run."""
        await self._rows(
            _ATTEMPT,
            {
                "id": job.id,
                "attempt": job.attempt,
                "task": job.task,
                "worker": self.name,
                "status": status,
                "error": error,
                "result": None if result is None else json.dumps(result, default=str),
            },
        )
