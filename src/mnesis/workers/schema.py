"""The job queue's tables: ``mnesis_jobs`` (the queue) and ``mnesis_job_attempts``.

``mnesis worker`` installs them at start (``CREATE ... IF NOT EXISTS`` under an advisory
lock, so several workers starting together do not race); the mnesis store's own
migrations do not touch them, and a store without them hands compactions back to its
sessions (docs/postgres.md, "Workers").

``mnesis_jobs`` holds one row per job: its coalescing key (at most one ``queued`` or
``running`` row per key, :mod:`mnesis.store.postgres.jobs`), its state, the worker
running it with that worker's lease token and heartbeat, run and failure counts, when
it may run next and its last error. ``mnesis_job_attempts`` holds one row per run of a
job (worker, status ``running | succeeded | failed | lost | released``, error, result).

Before this queue, mnesis used procrastinate (``procrastinate_*`` tables and
``mnesis_job_runs``); those tables are left alone and no longer read.
"""

from __future__ import annotations

import psycopg

from mnesis.errors import MnesisStoreError

__all__ = ["QUEUE_DDL", "QUEUE_SCHEMA_LOCK", "ensure_queue_schema"]

QUEUE_SCHEMA_LOCK = int.from_bytes(b"mnesisjq", "big")
"""Advisory lock key held (for one transaction) while installing the queue schema."""

QUEUE_DDL = """
CREATE TABLE IF NOT EXISTS mnesis_jobs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue TEXT NOT NULL,
    task TEXT NOT NULL,
    coalesce_key TEXT NOT NULL,
    args JSONB NOT NULL,
    status TEXT NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    again BOOLEAN NOT NULL DEFAULT false,
    attempts INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    recovered INTEGER NOT NULL DEFAULT 0,
    run_after TIMESTAMPTZ NOT NULL DEFAULT now(),
    worker TEXT,
    lease TEXT,
    heartbeat_at TIMESTAMPTZ,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS mnesis_jobs_active
    ON mnesis_jobs (coalesce_key) WHERE status IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS mnesis_jobs_ready
    ON mnesis_jobs (queue, run_after, id) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS mnesis_jobs_running
    ON mnesis_jobs (heartbeat_at) WHERE status = 'running';
CREATE TABLE IF NOT EXISTS mnesis_job_attempts (
    job_id BIGINT NOT NULL REFERENCES mnesis_jobs (id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    task TEXT NOT NULL,
    worker TEXT NOT NULL,
    status TEXT NOT NULL
        CHECK (status IN ('running', 'succeeded', 'failed', 'lost', 'released')),
    error TEXT,
    result JSONB,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at TIMESTAMPTZ,
    PRIMARY KEY (job_id, attempt)
);
"""
"""The queue's tables and indexes (idempotent)."""


async def ensure_queue_schema(url: str) -> bool:
    """Install the queue schema in the database at ``url`` if missing; True if installed now."""
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot connect to PostgreSQL: {exc}") from exc
    try:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (QUEUE_SCHEMA_LOCK,))
            cur = await conn.execute("SELECT to_regclass('mnesis_jobs') IS NULL")
            row = await cur.fetchone()
            missing = bool(row and row[0])
            await conn.execute(QUEUE_DDL)
        return missing
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot install the job queue schema: {exc}") from exc
    finally:
        await conn.close()
