"""``run_worker``: one worker process taking compaction and integrity jobs.

At start it installs the queue schema if needed and opens one mnesis store (its own
connection pool) for its jobs. Then procrastinate runs the jobs, ``concurrency`` at a
time, woken by ``LISTEN/NOTIFY`` and polling; the worker sends a heartbeat every
``heartbeat_seconds``.

Faults:

* SIGTERM / SIGINT: stop taking jobs, finish the running ones, exit (procrastinate's
  graceful shutdown; ``shutdown_timeout`` bounds the wait, then running jobs are
  cancelled and their committed rounds stay).
* SIGKILL or a lost host: the job stays ``doing`` with a dead heartbeat; every worker
  looks for such stalled jobs every ``stalled_check_seconds`` and puts them back in the
  queue (``retry_job``), so another worker finishes them. The dead worker's advisory lock
  died with its connection.
* PostgreSQL restarting: pools reconnect; a job whose commit failed is retried.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from procrastinate import App

from mnesis._tasks import cancel_and_wait
from mnesis.store.immutable import ImmutableStore
from mnesis.store.jobs import DEFAULT_QUEUE
from mnesis.workers.app import RUNNER_KEY, build_app
from mnesis.workers.jobs import JobRunner, WorkerOptions
from mnesis.workers.metrics import WorkerMetrics, serve_metrics
from mnesis.workers.schema import ensure_queue_schema

__all__ = ["WorkerSettings", "recover_stalled_jobs", "run_worker"]

logger = logging.getLogger("mnesis.workers")


@dataclass
class WorkerSettings:
    """How one worker process runs (the ``mnesis worker`` options)."""

    url: str
    """The PostgreSQL database of the store and of the job queue."""
    concurrency: int = 1
    """Jobs run at the same time by this worker."""
    queues: list[str] = field(default_factory=lambda: [DEFAULT_QUEUE])
    """The queues this worker takes jobs from."""
    metrics_port: int | None = None
    """Serve the worker's Prometheus series on this port (``None``: not served)."""
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    max_attempts: int = 5
    """Runs of a job before it fails for good, retried ``backoff ** (attempt + 1)`` s apart."""
    backoff: float = 2.0
    heartbeat_seconds: float = 5.0
    """How often the worker writes its heartbeat (what the stalled check reads)."""
    stalled_after_seconds: float = 30.0
    """A running job whose worker sent no heartbeat for this long goes back in the queue."""
    stalled_check_seconds: float = 10.0
    """How often this worker looks for stalled jobs."""
    shutdown_timeout: float | None = None
    """How long a stopping worker waits for its running jobs (``None``: as long as they take)."""
    poll_seconds: float = 5.0
    """How often the queue is polled besides ``LISTEN/NOTIFY``."""


async def recover_stalled_jobs(app: App, stalled_after_seconds: float) -> int:
    """Put back in the queue the jobs of workers whose heartbeat is older than
    ``stalled_after_seconds``; how many. Safe to run from several workers at once."""
    recovered = 0
    for job in await app.job_manager.get_stalled_jobs(
        seconds_since_heartbeat=stalled_after_seconds
    ):
        try:
            await app.job_manager.retry_job(job)
        except Exception as exc:  # another worker recovered it first
            logger.debug("stalled job %s not retried: %s", job.id, exc)
            continue
        await app.connector.execute_query_async(
            "UPDATE mnesis_job_runs SET status = 'lost', finished_at = now(), "
            "error = 'the worker stopped (no heartbeat); job put back in the queue' "
            "WHERE job_id = %(job_id)s AND status = 'running'",
            job_id=job.id,
        )
        logger.warning("job %s of a dead worker put back in the queue", job.id)
        recovered += 1
    return recovered


async def _recovery_loop(app: App, settings: WorkerSettings, metrics: WorkerMetrics | None) -> None:
    while True:
        try:
            count = await recover_stalled_jobs(app, settings.stalled_after_seconds)
            if count and metrics is not None:
                metrics.stalled_recovered.inc(count)
        except Exception as exc:  # the database may be restarting: try again later
            logger.warning("stalled-job check failed: %s", exc)
        await asyncio.sleep(settings.stalled_check_seconds)


async def run_worker(settings: WorkerSettings, options: WorkerOptions | None = None) -> None:
    """Run jobs until SIGTERM/SIGINT (see the module docstring)."""
    options = options or WorkerOptions()
    await ensure_queue_schema(settings.url)
    metrics = serve_metrics(settings.metrics_port) if settings.metrics_port else None
    store = await ImmutableStore.open(settings.url)
    app = build_app(
        settings.url,
        queue=settings.queues[0] if settings.queues else DEFAULT_QUEUE,
        max_attempts=settings.max_attempts,
        backoff=settings.backoff,
        pool_size=max(2, settings.concurrency + 2),
    )
    runner = JobRunner(store, options, metrics)
    try:
        async with app.open_async():
            recovery = asyncio.create_task(_recovery_loop(app, settings, metrics))
            logger.info("worker %s started on queues %s", settings.name, ",".join(settings.queues))
            extra: dict[str, Any] = (
                {}
                if settings.shutdown_timeout is None
                else {"shutdown_graceful_timeout": settings.shutdown_timeout}
            )
            try:
                await app.run_worker_async(
                    **extra,
                    queues=settings.queues,
                    name=settings.name,
                    concurrency=settings.concurrency,
                    additional_context={RUNNER_KEY: runner},
                    update_heartbeat_interval=settings.heartbeat_seconds,
                    stalled_worker_timeout=settings.stalled_after_seconds,
                    fetch_job_polling_interval=settings.poll_seconds,
                    install_signal_handlers=True,
                )
            finally:
                await cancel_and_wait(recovery)
        logger.info("worker %s stopped", settings.name)
    finally:
        await store.close()
