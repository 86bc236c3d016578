"""``run_worker``: one worker process taking compaction and integrity jobs.

At start it waits for the database (bounded, logged backoff: a worker started while
PostgreSQL is down waits for it), installs the queue schema if needed and opens one
mnesis store for its jobs. Then it runs jobs ``concurrency`` at a time from
``mnesis_jobs`` (:mod:`mnesis.workers.queue`), woken by ``LISTEN mnesis_jobs`` and by
polling every ``poll_seconds``, and beside them:

* a heartbeat every ``heartbeat_seconds`` on the rows of its running jobs; a job whose
  row is no longer its own (taken back while this worker could not beat) is cancelled
  here;
* every ``stalled_check_seconds``, a look for running jobs of other workers without a
  heartbeat for ``stalled_after_seconds``: each is taken back in place (``queued``
  again, or ``failed`` after ``max_attempts`` lost or failed runs). A session has one
  active job row, so taking one back never collides with a newer request; a failure
  is logged at WARNING with the job and its session.

Faults:

* SIGTERM / SIGINT: claim nothing more, finish the running jobs (``shutdown_timeout``
  bounds the wait, then they are cancelled and put back in the queue; their committed
  rounds stay), exit.
* SIGKILL or a lost host: the jobs keep a dead heartbeat; another worker takes them
  back after ``stalled_after_seconds``.
* PostgreSQL restarting, failing over, or cutting a connection: every loop retries with
  backoff (:mod:`mnesis.workers.backoff`); the worker never exits for it. A run cut by
  it is retried without counting as a failure. Time since the server started counts as
  heartbeat, so a restart alone makes no job look stalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import uuid
from dataclasses import dataclass, field

import psycopg

from mnesis._tasks import cancel_and_wait
from mnesis.store.immutable import ImmutableStore
from mnesis.store.jobs import DEFAULT_QUEUE
from mnesis.store.postgres.jobs import JOBS_CHANNEL
from mnesis.workers.backoff import Backoff, retry_until
from mnesis.workers.execute import JobPolicy, execute_job
from mnesis.workers.jobs import JobRunner, WorkerOptions
from mnesis.workers.metrics import WorkerMetrics, serve_metrics
from mnesis.workers.queue import ClaimedJob, WorkerQueue
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
    """Counted failed (or lost) runs of a job before it fails for good."""
    backoff: float = 2.0
    """A failed run is retried ``backoff ** failures`` seconds later."""
    heartbeat_seconds: float = 5.0
    """How often the worker writes its heartbeat (what the stalled check reads)."""
    stalled_after_seconds: float = 30.0
    """A running job whose worker sent no heartbeat for this long is taken back."""
    stalled_check_seconds: float = 10.0
    """How often this worker looks for stalled jobs."""
    shutdown_timeout: float | None = None
    """How long a stopping worker waits for its running jobs (``None``: as long as they take)."""
    poll_seconds: float = 5.0
    """How often the queue is polled besides ``LISTEN/NOTIFY``."""
    reconnect_max_seconds: float = 30.0
    """The longest wait between two tries to reach an unreachable database."""


async def recover_stalled_jobs(
    queue: WorkerQueue, stalled_after_seconds: float, max_attempts: int = 5
) -> int:
    """Take back the running jobs of other workers with no heartbeat for
    ``stalled_after_seconds``; how many. Safe to run from several workers at once."""
    recovered = 0
    for job in await queue.stalled(stalled_after_seconds):
        if job.lease == queue.lease:
            continue  # ours: this worker is alive, its heartbeat only failed
        try:
            status = await queue.recover(job, stalled_after_seconds, max_attempts)
        except Exception as exc:
            logger.warning(
                "could not take back stalled job %s (session %s, worker %s): %s",
                job.id,
                job.session_id,
                job.worker,
                exc,
                extra={"mnesis": {"job_id": job.id, "session_id": job.session_id}},
            )
            continue
        if status is None:
            continue  # its worker beat again, or another worker took it back first
        logger.warning(
            "job %s (session %s) of worker %s had no heartbeat for %g s: %s again",
            job.id,
            job.session_id,
            job.worker,
            stalled_after_seconds,
            status,
            extra={"mnesis": {"job_id": job.id, "session_id": job.session_id}},
        )
        recovered += 1
    return recovered


class _Worker:
    """The loops of one running worker (see the module docstring)."""

    def __init__(
        self,
        settings: WorkerSettings,
        queue: WorkerQueue,
        runner: JobRunner,
        metrics: WorkerMetrics | None,
        stop: asyncio.Event,
    ) -> None:
        self.settings = settings
        self.queue = queue
        self.runner = runner
        self.metrics = metrics
        self.stop = stop
        self.wake = asyncio.Event()
        self.running: dict[int, tuple[asyncio.Task[None], ClaimedJob]] = {}
        self.settling: set[int] = set()
        self.policy = JobPolicy(
            settings.max_attempts, settings.backoff, settings.reconnect_max_seconds
        )

    async def run(self) -> None:
        side = [
            asyncio.create_task(self._heartbeats(), name="mnesis-heartbeat"),
            asyncio.create_task(self._recovery(), name="mnesis-recovery"),
            asyncio.create_task(self._listen(), name="mnesis-listen"),
        ]
        try:
            await self._claim_loop()
            await self._drain()
        finally:
            for task in side:
                await cancel_and_wait(task)

    async def _claim_loop(self) -> None:
        backoff = Backoff(cap=self.settings.reconnect_max_seconds)
        queues = self.settings.queues
        while not self.stop.is_set():
            self.wake.clear()
            while len(self.running) < self.settings.concurrency and not self.stop.is_set():
                job = await retry_until(
                    "taking a job", lambda: self.queue.claim(queues), self.stop, backoff
                )
                if job is None:
                    break
                self._start(job)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.poll_seconds):
                    waits = [asyncio.ensure_future(e.wait()) for e in (self.wake, self.stop)]
                    try:
                        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        for w in waits:
                            w.cancel()

    def _start(self, job: ClaimedJob) -> None:
        run = execute_job(
            job, self.queue, self.runner, self.policy, lambda: self.settling.add(job.id)
        )
        task = asyncio.create_task(run, name=f"mnesis-job-{job.id}")
        self.running[job.id] = (task, job)

        def _done(done: asyncio.Task[None]) -> None:
            if not done.cancelled() and done.exception() is not None:
                logger.error(
                    "job %s (session %s) ended with an unexpected error",
                    job.id,
                    job.session_id,
                    exc_info=done.exception(),
                )
            self.running.pop(job.id, None)
            self.settling.discard(job.id)
            self.wake.set()

        task.add_done_callback(_done)

    async def _drain(self) -> None:
        tasks = [t for t, _ in self.running.values()]
        if not tasks:
            return
        logger.info("waiting for %d running job(s) to finish", len(tasks))
        _, pending = await asyncio.wait(tasks, timeout=self.settings.shutdown_timeout)
        for task in pending:
            await cancel_and_wait(task)

    async def _heartbeats(self) -> None:
        failing = False
        while True:
            await asyncio.sleep(self.settings.heartbeat_seconds)
            ids = list(self.running)
            if not ids:
                continue
            try:
                ours = await self.queue.heartbeat(ids)
            except Exception as exc:
                if not failing:
                    logger.warning("heartbeat failed (%s); retrying", exc)
                failing = True
                continue
            if failing:
                logger.warning("heartbeat written again")
                failing = False
            for job_id in set(ids) - ours:
                entry = self.running.get(job_id)
                if entry is None or entry[0].done() or job_id in self.settling:
                    continue  # its run is over: settling its row says what happened
                logger.warning(
                    "job %s (session %s) was taken back from this worker; stopping its run",
                    job_id,
                    entry[1].session_id,
                )
                entry[0].cancel()

    async def _recovery(self) -> None:
        while True:
            await asyncio.sleep(self.settings.stalled_check_seconds)
            try:
                count = await recover_stalled_jobs(
                    self.queue, self.settings.stalled_after_seconds, self.settings.max_attempts
                )
            except Exception as exc:  # the database may be restarting: try again later
                logger.warning("stalled-job check failed: %s", exc)
                continue
            if count:
                self.wake.set()
                if self.metrics is not None:
                    self.metrics.stalled_recovered.inc(count)

    async def _listen(self) -> None:
        backoff = Backoff(cap=self.settings.reconnect_max_seconds)
        queues = set(self.settings.queues)
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.settings.url, autocommit=True)
                async with conn:
                    await conn.execute(f"LISTEN {JOBS_CHANNEL}")
                    if backoff.failures:
                        logger.warning("listening for new jobs again")
                    backoff.reset()
                    self.wake.set()  # jobs may have been queued while not listening
                    async for note in conn.notifies():
                        if note.payload in queues:
                            self.wake.set()
            except (psycopg.Error, OSError) as exc:
                delay = backoff.next()
                logger.warning(
                    "listening for new jobs failed (%s); polling, reconnecting in %.1f s",
                    str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                    delay,
                )
                await asyncio.sleep(delay)


def _install_signals(stop: asyncio.Event) -> list[signal.Signals]:
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError, ValueError):
            continue  # not the main thread, or no signals here: the caller cancels
        installed.append(sig)
    return installed


async def run_worker(
    settings: WorkerSettings,
    options: WorkerOptions | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run jobs until SIGTERM/SIGINT, or until ``stop`` is set (see the module docstring)."""
    options = options or WorkerOptions()
    stop = stop or asyncio.Event()
    installed = _install_signals(stop)
    metrics = serve_metrics(settings.metrics_port) if settings.metrics_port else None
    backoff = Backoff(cap=settings.reconnect_max_seconds)
    store: ImmutableStore | None = None
    queue: WorkerQueue | None = None
    try:
        ready = await retry_until(
            "installing the job queue schema",
            lambda: ensure_queue_schema(settings.url),
            stop,
            backoff,
        )
        if ready is None:
            return
        store = await retry_until(
            "opening the store", lambda: ImmutableStore.open(settings.url), stop, backoff
        )
        if store is None:
            return
        queue = WorkerQueue(
            settings.url,
            name=settings.name,
            lease=f"{settings.name}:{uuid.uuid4().hex[:12]}",
            max_connections=settings.concurrency + 3,
            reconnect_seconds=settings.reconnect_max_seconds,
        )
        await queue.open()
        logger.info("worker %s started on queues %s", settings.name, ",".join(settings.queues))
        await _Worker(settings, queue, JobRunner(store, options, metrics), metrics, stop).run()
        logger.info("worker %s stopped", settings.name)
    finally:
        if queue is not None:
            await queue.close()
        if store is not None:
            await store.close()
        loop = asyncio.get_running_loop()
        for sig in installed:
            loop.remove_signal_handler(sig)
