"""The job queue's tables: procrastinate's schema plus ``mnesis_job_runs``.

``mnesis worker`` installs them at start (once per database, under an advisory lock so
several workers starting together do not race); the mnesis store's own migrations do not
touch them. procrastinate records no error text, so every attempt of a job is also a row
of ``mnesis_job_runs`` (worker, status, last error, result): what ``mnesis jobs`` shows.
Upgrading procrastinate across a schema change needs its migrations
(``procrastinate schema --migrate``), as its documentation describes.
"""

from __future__ import annotations

import psycopg
from procrastinate.schema import SchemaManager

from mnesis.errors import MnesisStoreError

__all__ = ["QUEUE_SCHEMA_LOCK", "ensure_queue_schema"]

QUEUE_SCHEMA_LOCK = int.from_bytes(b"mnesisjq", "big")
"""Advisory lock key held (for one transaction) while installing the queue schema."""

JOB_RUNS_DDL = """
CREATE TABLE IF NOT EXISTS mnesis_job_runs (
    job_id BIGINT NOT NULL,
    attempt INTEGER NOT NULL,
    task_name TEXT NOT NULL,
    worker TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'lost')),
    error TEXT,
    result JSONB,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at TIMESTAMPTZ,
    PRIMARY KEY (job_id, attempt)
)
"""


async def ensure_queue_schema(url: str) -> bool:
    """Install the queue schema in the database at ``url`` if missing; True if installed now."""
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot connect to PostgreSQL: {exc}") from exc
    try:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (QUEUE_SCHEMA_LOCK,))
            cur = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NULL")
            row = await cur.fetchone()
            missing = bool(row and row[0])
            if missing:
                await conn.execute(SchemaManager.get_schema())
            await conn.execute(JOB_RUNS_DDL)
        return missing
    except psycopg.Error as exc:
        raise MnesisStoreError(f"cannot install the job queue schema: {exc}") from exc
    finally:
        await conn.close()
