"""What ``mnesis jobs`` shows, and queueing jobs by hand.

Jobs live in procrastinate's ``procrastinate_jobs``; the last error of each comes from
``mnesis_job_runs`` (procrastinate keeps none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg

from mnesis.errors import InvalidArgumentError, MnesisStoreError
from mnesis.store.jobs import DEFAULT_QUEUE, INTEGRITY_TASK

__all__ = ["JobRow", "enqueue_integrity", "list_jobs"]

STATUSES = ("todo", "doing", "failed", "succeeded", "cancelled", "aborted")
_LABELS = {"todo": "queued", "doing": "running"}


@dataclass(frozen=True, slots=True)
class JobRow:
    """One job of the queue."""

    id: int
    task: str
    status: str
    """``queued``, ``running``, ``failed``, ``succeeded``, ``cancelled`` or ``aborted``."""
    session_id: str | None
    args: dict[str, Any]
    attempts: int
    last_error: str | None
    scheduled_at: str | None


async def _connect(url: str) -> psycopg.AsyncConnection[Any]:
    try:
        return await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot connect to PostgreSQL: {exc}") from exc


async def list_jobs(
    url: str, statuses: tuple[str, ...] = ("todo", "doing", "failed"), limit: int = 100
) -> list[JobRow]:
    """Jobs in ``statuses`` (procrastinate's names), newest first; [] without a queue."""
    unknown = set(statuses) - set(STATUSES)
    if unknown:
        raise InvalidArgumentError(f"unknown job status {sorted(unknown)}; use {STATUSES}")
    conn = await _connect(url)
    try:
        cur = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
        row = await cur.fetchone()
        if not row or not row[0]:
            return []
        cur = await conn.execute(
            "SELECT j.id, j.task_name, j.status::text, j.args, j.attempts, "
            "j.scheduled_at::text, (SELECT r.error FROM mnesis_job_runs r "
            "WHERE r.job_id = j.id AND r.error IS NOT NULL "
            "ORDER BY r.attempt DESC LIMIT 1) FROM procrastinate_jobs j "
            "WHERE j.status::text = ANY(%s) ORDER BY j.id DESC LIMIT %s",
            (list(statuses), limit),
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
            status=_LABELS.get(r[2], r[2]),
            session_id=(r[3] or {}).get("session_id"),
            args=r[3] or {},
            attempts=r[4],
            last_error=r[6],
            scheduled_at=r[5],
        )
        for r in rows
    ]


async def enqueue_integrity(
    url: str, session_id: str | None = None, mode: str = "scan", queue: str = DEFAULT_QUEUE
) -> int:
    """Queue an integrity job (one queued per session, or for all); its id."""
    if mode not in ("scan", "scan_and_plan"):
        raise InvalidArgumentError(f"mode must be 'scan' or 'scan_and_plan', not {mode!r}")
    lock = f"mnesis.integrity:{session_id or '*'}"
    args = json.dumps({"session_id": session_id, "mode": mode})
    conn = await _connect(url)
    try:
        try:
            cur = await conn.execute(
                "SELECT unnest(procrastinate_defer_jobs_v1(ARRAY[ROW(%s, %s, 0, NULL, %s, "
                "%s::jsonb, NULL)::procrastinate_job_to_defer_v1]))",
                (queue, INTEGRITY_TASK, lock, args),
            )
        except psycopg.errors.UniqueViolation:
            cur = await conn.execute(
                "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'todo'",
                (lock,),
            )
        row = await cur.fetchone()
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot queue the integrity job: {exc}") from exc
    finally:
        await conn.close()
    if row is None:
        raise MnesisStoreError("the integrity job was taken while queueing; retry")
    return int(row[0])
