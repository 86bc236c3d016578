"""What ``mnesis jobs`` shows, and queueing integrity jobs by hand.

A job's status is its ``mnesis_jobs`` state, except that a ``running`` job whose
worker sent no heartbeat for ``stalled_after`` seconds shows as ``stalled``: its worker
is gone, and the next worker's stalled check takes it back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg

from mnesis.errors import InvalidArgumentError, MnesisStoreError
from mnesis.store.jobs import DEFAULT_QUEUE, INTEGRITY_TASK
from mnesis.store.postgres.jobs import REQUEST_SQL

__all__ = ["STATUSES", "JobRow", "enqueue_integrity", "list_jobs"]

STATUSES = ("queued", "running", "stalled", "failed", "succeeded", "cancelled")
"""What a job can show as (``stalled``: running, with no heartbeat for a while)."""

_LIST = """
SELECT id, task, CASE WHEN status = 'running' AND GREATEST(heartbeat_at,
        pg_postmaster_start_time()) < now() - make_interval(secs => %(secs)s)
    THEN 'stalled' ELSE status END AS shown,
    args, attempts, failures, recovered, again, worker,
    EXTRACT(EPOCH FROM now() - heartbeat_at)::float8, last_error,
    run_after::text, updated_at::text
FROM mnesis_jobs
"""


@dataclass(frozen=True, slots=True)
class JobRow:
    """One job of the queue."""

    id: int
    task: str
    status: str
    """``queued``, ``running``, ``stalled``, ``failed``, ``succeeded`` or ``cancelled``."""
    session_id: str | None
    args: dict[str, Any]
    attempts: int
    """Runs started."""
    failures: int
    """Failed or lost runs since the last success."""
    recovered: int
    """Times taken back from a worker that stopped sending heartbeats."""
    again: bool
    """Requested again while running: it runs once more after this run."""
    worker: str | None
    """The worker running it (or that ran it last)."""
    heartbeat_age: float | None
    """Seconds since its worker's last heartbeat (None: never ran)."""
    last_error: str | None
    scheduled_at: str | None
    """When it may run (a retry waits for its backoff)."""
    updated_at: str | None


async def _connect(url: str) -> psycopg.AsyncConnection[Any]:
    try:
        return await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot connect to PostgreSQL: {exc}") from exc


async def list_jobs(
    url: str,
    statuses: tuple[str, ...] = ("queued", "running", "stalled", "failed"),
    limit: int = 100,
    stalled_after: float = 30.0,
) -> list[JobRow]:
    """Jobs in ``statuses``, newest first; [] without a queue. A running job without a
    heartbeat for ``stalled_after`` seconds is ``stalled``."""
    unknown = set(statuses) - set(STATUSES)
    if unknown:
        raise InvalidArgumentError(f"unknown job status {sorted(unknown)}; use {STATUSES}")
    if not stalled_after > 0:
        raise InvalidArgumentError(f"stalled_after must be > 0, not {stalled_after!r}")
    conn = await _connect(url)
    try:
        cur = await conn.execute("SELECT to_regclass('mnesis_jobs') IS NOT NULL")
        row = await cur.fetchone()
        if not row or not row[0]:
            return []
        cur = await conn.execute(
            f"SELECT * FROM ({_LIST}) j WHERE shown = ANY(%(statuses)s) "
            "ORDER BY id DESC LIMIT %(limit)s",
            {"secs": stalled_after, "statuses": list(statuses), "limit": limit},
        )
        rows = await cur.fetchall()
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot list jobs: {exc}") from exc
    finally:
        await conn.close()
    return [
        JobRow(
            id=r[0],
            task=r[1],
            status=r[2],
            session_id=(r[3] or {}).get("session_id"),
            args=r[3] or {},
            attempts=r[4],
            failures=r[5],
            recovered=r[6],
            again=r[7],
            worker=r[8],
            heartbeat_age=None if r[9] is None else round(float(r[9]), 1),
            last_error=r[10],
            scheduled_at=r[11],
            updated_at=r[12],
        )
        for r in rows
    ]


async def enqueue_integrity(
    url: str, session_id: str | None = None, mode: str = "scan", queue: str = DEFAULT_QUEUE
) -> int:
    """Queue an integrity job (one active per session, or for all); its id."""
    if mode not in ("scan", "scan_and_plan"):
        raise InvalidArgumentError(f"mode must be 'scan' or 'scan_and_plan', not {mode!r}")
    params = {
        "queue": queue,
        "task": INTEGRITY_TASK,
        "key": f"{INTEGRITY_TASK}:{session_id or '*'}",
        "args": json.dumps({"session_id": session_id, "mode": mode}),
    }
    conn = await _connect(url)
    try:
        cur = await conn.execute(REQUEST_SQL, params)
        row = await cur.fetchone()
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot queue the integrity job: {exc}") from exc
    finally:
        await conn.close()
    if row is None:
        raise MnesisStoreError("the integrity job could not be queued; retry")
    return int(row[0])
