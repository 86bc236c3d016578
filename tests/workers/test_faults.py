"""Worker processes under faults: a worker SIGKILLed mid-job while turns queue more work,
PostgreSQL restarted (``-m immediate``) under two workers, a worker started while the
server is down. The server faults run on a throwaway cluster of their own."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchmarks._pg import Cluster, ClusterError

from mnesis.workers import ensure_queue_schema, list_jobs
from tests.pg_fixtures import throwaway_database
from tests.workers import (
    compaction_settled,
    grow_session,
    integrity_ok,
    query,
    request_compaction,
    start_worker,
    stop_workers,
    wait_for,
)

pytestmark = pytest.mark.postgres

_TERMINATE_OTHERS = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)
STALLED_AFTER = 3.0
"""``stalled_after_seconds`` of the test workers (tests/workers/worker_main.py)."""


async def test_a_killed_workers_session_is_compacted_by_another_while_turns_queue_jobs(
    pg_url: str, tmp_path: Path
) -> None:
    await ensure_queue_schema(pg_url)
    names = ("a", "b")
    workers = {name: start_worker(pg_url, tmp_path, name, "600") for name in names}
    try:
        session_id = await grow_session(pg_url, 22)
        await wait_for(lambda: all(_started(tmp_path, n) for n in names), "the workers")
        await request_compaction(pg_url, session_id)
        await wait_for(
            lambda: any((tmp_path / f"{n}.started").exists() for n in names), "the job to start"
        )
        doomed = next(n for n in names if (tmp_path / f"{n}.started").exists())
        rescuer = next(n for n in names if n != doomed)
        workers[doomed].kill()
        await asyncio.to_thread(workers[doomed].wait, 60)
        killed = time.monotonic()
        (tmp_path / "go").touch()  # the rescuer's summaries do not wait
        # New turns go on queueing compactions of the session while its job is orphaned.
        await grow_session(pg_url, 3, session_id=session_id)
        for _ in range(3):
            await request_compaction(pg_url, session_id)

        async def shown_stalled() -> bool:  # sooner than the workers' STALLED_AFTER
            jobs = await list_jobs(pg_url, stalled_after=1.0)
            return [(j.session_id, j.status) for j in jobs] == [(session_id, "stalled")]

        await wait_for(shown_stalled, "`mnesis jobs` to show the job as stalled", 30)
        await wait_for(
            lambda: compaction_settled(pg_url, session_id),
            "another worker to finish the session's compaction",
            max(1.0, killed + STALLED_AFTER + 30 - time.monotonic()),
        )
    finally:
        await stop_workers(list(workers.values()))
    runs = query(
        pg_url, "SELECT worker, status, error FROM mnesis_job_attempts ORDER BY job_id, attempt"
    )
    assert [r[:2] for r in runs][:2] == [(doomed, "lost"), (rescuer, "succeeded")], runs
    assert "no heartbeat" in runs[0][2]
    assert {r[1] for r in runs[2:]} <= {"succeeded"}, runs
    log = (tmp_path / f"{rescuer}.log").read_text()
    assert "WARNING" in log and session_id in log and "had no heartbeat" in log
    assert await integrity_ok(pg_url, session_id) == []


@pytest.fixture
def own_cluster() -> Iterator[Cluster]:
    """A PostgreSQL cluster of this test alone (it gets restarted and stopped)."""
    try:
        cluster = Cluster()
        cluster.start()
    except ClusterError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


def _started(tmp: Path, name: str) -> bool:
    log = tmp / f"{name}.log"
    return log.exists() and "started on queues" in log.read_text()


async def test_workers_started_while_postgresql_is_down_outlive_its_restart_mid_job(
    own_cluster: Cluster, tmp_path: Path
) -> None:
    names = ("w1", "w2", "w3")
    dsn = f"postgresql://postgres@127.0.0.1:{own_cluster.port}/postgres"
    with throwaway_database(dsn) as url:
        await ensure_queue_schema(url)
        sessions = await asyncio.gather(*(grow_session(url, 28) for _ in names))
        await asyncio.to_thread(own_cluster.halt)
        workers = [start_worker(url, tmp_path, name, "0.3") for name in names]

        def alive() -> bool:
            exited = [(w.args[-2], w.returncode) for w in workers if w.poll() is not None]
            assert not exited, f"workers exited: {exited}"
            return True

        def logged(text: str) -> bool:
            return alive() and all(text in (tmp_path / f"{n}.log").read_text() for n in names)

        try:
            await wait_for(lambda: logged("retrying in"), "the workers to wait for the server")
            await asyncio.to_thread(own_cluster.resume)
            await wait_for(lambda: logged("started on queues"), "the workers to start")
            for session_id in sessions:
                await request_compaction(url, session_id)
            await wait_for(
                lambda: alive() and all((tmp_path / f"{n}.started").exists() for n in names),
                "each worker to be running a job",
            )
            await asyncio.to_thread(own_cluster.restart, "immediate")

            async def all_done() -> bool:
                return alive() and all([await compaction_settled(url, s) for s in sessions])

            await wait_for(all_done, "every session compacted after the restart", 60)
            ran = query(url, "SELECT DISTINCT worker FROM mnesis_job_attempts WHERE status = %s",
                        "succeeded")  # fmt: skip
            assert sorted(r[0] for r in ran) == list(names)

            # Every backend of the workers terminated (as an admin or a failover would).
            cut = query(url, _TERMINATE_OTHERS)
            assert cut[0][0] >= len(names)
            await request_compaction(url, sessions[0])
            await wait_for(
                lambda: alive() and compaction_settled(url, sessions[0]), "a job after that", 60
            )
        finally:
            await stop_workers(workers)
        assert [w.returncode for w in workers] == [0, 0, 0]
        for session_id in sessions:
            assert await integrity_ok(url, session_id) == []
