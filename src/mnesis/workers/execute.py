"""Running one claimed job: its body, its attempt row, and settling its row in the queue.

Tasks (``task`` of ``mnesis_jobs``):

* ``mnesis.compact`` (``session_id``, ``reason``, ``requested_at``): see
  :meth:`~mnesis.workers.jobs.JobRunner.compact`;
* ``mnesis.integrity`` (``session_id`` or null, ``mode``): a read-only scan.

A failed run is retried after ``backoff ** failures`` seconds up to ``max_attempts``
counted failures, except for errors no retry can fix (unknown session, bad arguments,
unknown task), which fail the job at once; a run that failed because the database
went away is retried without being counted. Settling the row is itself retried until
the database answers (the result is kept meanwhile), unless the job was taken back
from this worker, which is logged and changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mnesis.errors import InvalidArgumentError, NotFoundError
from mnesis.store.jobs import COMPACTION_TASK, INTEGRITY_TASK
from mnesis.workers.backoff import Backoff, is_disconnect, retry_until
from mnesis.workers.jobs import JobRunner
from mnesis.workers.queue import ClaimedJob, WorkerQueue

__all__ = ["JobPolicy", "execute_job"]

logger = logging.getLogger("mnesis.workers")


class UnknownTaskError(InvalidArgumentError):
    """A job names a task this worker does not know."""


@dataclass(frozen=True, slots=True)
class JobPolicy:
    """How failed runs are retried and how long the database is waited for."""

    max_attempts: int = 5
    backoff: float = 2.0
    reconnect_max_seconds: float = 30.0


async def _body(runner: JobRunner, job: ClaimedJob) -> dict[str, Any]:
    args = job.args
    if job.task == COMPACTION_TASK:
        session_id = args.get("session_id")
        if not isinstance(session_id, str):
            raise InvalidArgumentError(f"compaction job {job.id} has no session_id")
        reason = str(args.get("reason", "threshold"))
        return await runner.compact(session_id, reason, f"job:{job.id}:{job.attempt}")
    if job.task == INTEGRITY_TASK:
        return await runner.integrity(job.session_id, str(args.get("mode", "scan")))
    raise UnknownTaskError(f"job {job.id}: unknown task {job.task!r}")


def _fields(job: ClaimedJob, **more: Any) -> dict[str, Any]:
    return {"job_id": job.id, "task": job.task, "session_id": job.session_id, **more}


async def execute_job(
    job: ClaimedJob,
    queue: WorkerQueue,
    runner: JobRunner,
    policy: JobPolicy,
    on_settling: Callable[[], None] | None = None,
) -> None:
    """Run ``job`` and settle its row (cancelled: put it back in the queue, best effort).

    Settling waits for an unreachable database as long as it takes; a stopping worker
    bounds that by cancelling (the job is then taken back by another worker once its
    heartbeat is old). ``on_settling`` is called when the run is over and its row is
    about to be settled."""
    never = asyncio.Event()
    backoff = Backoff(cap=policy.reconnect_max_seconds)
    await _record(job, queue, "running")
    try:
        result = await _body(runner, job)
    except asyncio.CancelledError:
        await _release(job, queue)
        raise
    except Exception as exc:
        if on_settling is not None:
            on_settling()
        error = f"{type(exc).__name__}: {exc}"
        final = isinstance(exc, NotFoundError | InvalidArgumentError)
        counted = not is_disconnect(exc)
        delay = policy.backoff ** (job.failures + 1) if counted else backoff.first
        logger.warning(
            "job %s (%s, session %s) run %s failed: %s",
            job.id,
            job.task,
            job.session_id,
            job.attempt,
            error,
            extra={"mnesis": _fields(job, attempt=job.attempt, error=error)},
        )
        if runner.metrics is not None:
            runner.metrics.job(job.task, "failed")

        def _settle_failure() -> Awaitable[str | None]:
            return queue.failed(
                job,
                error,
                final=final,
                delay=delay,
                max_attempts=policy.max_attempts,
                counted=counted,
            )

        status = await retry_until(
            f"recording the failure of job {job.id}", _settle_failure, never, backoff
        )
        if status is not None:
            await _record(job, queue, "failed", error)
        _log_settled(job, status, "failed")
        return
    if on_settling is not None:
        on_settling()
    if runner.metrics is not None:
        runner.metrics.job(job.task, "succeeded")

    status = await retry_until(
        f"recording the result of job {job.id}", lambda: queue.succeeded(job), never, backoff
    )
    if status is not None:
        await _record(job, queue, "succeeded", None, result)
    _log_settled(job, status, "succeeded")


def _log_settled(job: ClaimedJob, status: str | None, outcome: str) -> None:
    if status is None:
        logger.warning(
            "job %s (session %s) %s here but was taken back from this worker meanwhile "
            "(its heartbeat looked dead); another run settles it",
            job.id,
            job.session_id,
            outcome,
            extra={"mnesis": _fields(job, outcome=outcome)},
        )
    elif status == "queued" and outcome == "succeeded":
        logger.info("job %s requested again while it ran: queued once more", job.id)
    elif status == "failed":
        logger.warning(
            "job %s (%s, session %s) failed for good after %s runs",
            job.id,
            job.task,
            job.session_id,
            job.attempt,
            extra={"mnesis": _fields(job, outcome="failed")},
        )


async def _record(
    job: ClaimedJob,
    queue: WorkerQueue,
    status: str,
    error: str | None = None,
    result: dict[str, Any] | None = None,
) -> None:
    """Write the run's ``mnesis_job_attempts`` row (a record only: a failure is logged)."""
    try:
        await queue.record_attempt(job, status, error, result)
    except Exception as exc:
        logger.warning("job %s: could not record its run as %s: %s", job.id, status, exc)


async def _release(job: ClaimedJob, queue: WorkerQueue) -> None:
    try:
        async with asyncio.timeout(5):
            if await queue.release(job) is not None:
                await queue.record_attempt(job, "released", "the worker stopped before it ended")
    except Exception as exc:  # its heartbeat stops: another worker takes it back later
        logger.warning(
            "job %s (session %s) could not be put back in the queue: %s",
            job.id,
            job.session_id,
            exc,
        )
