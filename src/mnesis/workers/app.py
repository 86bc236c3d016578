"""The procrastinate app of the workers: its connector, the two tasks, their retries.

Tasks (queue ``mnesis`` unless configured otherwise):

* ``mnesis.compact`` (``session_id``, ``reason``, ``requested_at``): see
  :meth:`~mnesis.workers.jobs.JobRunner.compact`. Queued with the session's ``lock`` and
  ``queueing_lock`` (:func:`mnesis.store.jobs.compaction_lock_name`).
* ``mnesis.integrity`` (``session_id`` or null, ``mode``): read-only scan.

A failed attempt is retried with exponential backoff (``backoff ** (attempt + 1)``
seconds) up to ``max_attempts`` runs, except for errors no retry can fix (unknown
session, bad arguments). Every attempt is a row of ``mnesis_job_runs``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attr
from procrastinate import App, JobContext, PsycopgConnector, RetryStrategy
from procrastinate.jobs import Job
from procrastinate.retry import RetryDecision

from mnesis.errors import InvalidArgumentError, NotFoundError
from mnesis.store.jobs import COMPACTION_TASK, DEFAULT_QUEUE, INTEGRITY_TASK
from mnesis.workers.jobs import JobRunner

__all__ = ["RUNNER_KEY", "build_app"]

logger = logging.getLogger("mnesis.workers")

RUNNER_KEY = "mnesis_runner"
"""Key of the :class:`JobRunner` in procrastinate's ``additional_context``."""


@attr.dataclass(kw_only=True)
class _Retry(RetryStrategy):
    """Exponential backoff, except for errors no retry can fix."""

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, NotFoundError | InvalidArgumentError):
            return None
        return super().get_retry_decision(exception=exception, job=job)


async def _record(context: JobContext, status: str, error: str | None, result: Any) -> None:
    job = context.job
    await context.app.connector.execute_query_async(
        "INSERT INTO mnesis_job_runs (job_id, attempt, task_name, worker, status, error, result) "
        "VALUES (%(job_id)s, %(attempt)s, %(task)s, %(worker)s, %(status)s, %(error)s, "
        "%(result)s) ON CONFLICT (job_id, attempt) DO UPDATE SET status = excluded.status, "
        "error = excluded.error, result = excluded.result, "
        "finished_at = CASE WHEN excluded.status = 'running' THEN NULL ELSE now() END",
        job_id=job.id,
        attempt=job.attempts,
        task=job.task_name,
        worker=context.worker_name or "",
        status=status,
        error=error,
        result=None if result is None else json.dumps(result, default=str),
    )


async def _run(
    context: JobContext, body: Callable[[JobRunner, str], Awaitable[dict[str, Any]]]
) -> None:
    runner: JobRunner = context.additional_context[RUNNER_KEY]
    job = context.job
    await _record(context, "running", None, None)
    try:
        result = await body(runner, f"job:{job.id}:{job.attempts}")
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        logger.warning(
            "job %s (%s) attempt %s failed: %s", job.id, job.task_name, job.attempts, error
        )
        if runner.metrics is not None:
            runner.metrics.job(job.task_name, "failed")
        try:
            await _record(context, "failed", error, None)
        except Exception:
            logger.exception("could not record the failure of job %s", job.id)
        raise
    await _record(context, "succeeded", None, result)
    if runner.metrics is not None:
        runner.metrics.job(job.task_name, "succeeded")


def build_app(
    url: str,
    *,
    queue: str = DEFAULT_QUEUE,
    max_attempts: int = 5,
    backoff: float = 2.0,
    pool_size: int = 4,
) -> App:
    """A procrastinate app on the database at ``url`` with the mnesis tasks registered."""
    connector = PsycopgConnector(conninfo=url, min_size=1, max_size=pool_size)
    app = App(connector=connector)
    retry = _Retry(max_attempts=max_attempts, exponential_wait=int(backoff))

    @app.task(name=COMPACTION_TASK, queue=queue, pass_context=True, retry=retry)
    async def compact(
        context: JobContext,
        session_id: str,
        reason: str = "threshold",
        requested_at: str | None = None,
    ) -> None:
        await _run(context, lambda runner, cid: runner.compact(session_id, reason, cid))

    @app.task(name=INTEGRITY_TASK, queue=queue, pass_context=True, retry=retry)
    async def integrity(
        context: JobContext, session_id: str | None = None, mode: str = "scan"
    ) -> None:
        await _run(context, lambda runner, _cid: runner.integrity(session_id, mode))

    return app
