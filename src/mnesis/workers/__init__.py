"""Background compaction and integrity workers on PostgreSQL (extra ``workers``).

Jobs are rows of ``mnesis_jobs`` in the sessions' own database: sessions in
``compaction.mode = "worker"`` queue compactions (:mod:`mnesis.store.jobs`),
``mnesis worker`` runs them (:func:`run_worker`), ``mnesis jobs`` shows them
(:func:`list_jobs`). See docs/postgres.md, "Workers".
"""

from __future__ import annotations

from mnesis.workers.jobs import JobRunner, WorkerOptions
from mnesis.workers.queue import WorkerQueue
from mnesis.workers.runner import WorkerSettings, recover_stalled_jobs, run_worker
from mnesis.workers.schema import ensure_queue_schema
from mnesis.workers.status import JobRow, enqueue_integrity, list_jobs

__all__ = [
    "JobRow",
    "JobRunner",
    "WorkerOptions",
    "WorkerQueue",
    "WorkerSettings",
    "enqueue_integrity",
    "ensure_queue_schema",
    "list_jobs",
    "recover_stalled_jobs",
    "run_worker",
]
