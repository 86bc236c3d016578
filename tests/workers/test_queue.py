"""The job queue's rules, in one process: one active job per session, a request while it
runs makes it run again, a stalled job is taken back in place (never colliding with
newer requests), a taken-back job's old worker changes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from mnesis.cli import run
from mnesis.store.immutable import ImmutableStore
from mnesis.workers import WorkerQueue, ensure_queue_schema, list_jobs, recover_stalled_jobs
from tests.workers import query, request_compaction

pytestmark = pytest.mark.postgres

SESSION = "sess_01JQUEUE00000000000000000A"


@pytest.fixture
async def queues(pg_url: str) -> AsyncIterator[tuple[WorkerQueue, WorkerQueue]]:
    await ensure_queue_schema(pg_url)
    dead = WorkerQueue(pg_url, name="dead", lease="dead:1", max_connections=2, reconnect_seconds=5)
    alive = WorkerQueue(
        pg_url, name="alive", lease="alive:1", max_connections=2, reconnect_seconds=5
    )
    await dead.open()
    await alive.open()
    try:
        yield dead, alive
    finally:
        await dead.close()
        await alive.close()


async def _state(url: str) -> str | None:
    store = await ImmutableStore.open(url)
    try:
        queue = store.compaction_queue()
        assert queue is not None
        return await queue.state(SESSION)
    finally:
        await store.close()


def _age_heartbeats(url: str, seconds: int) -> None:
    query(url, "UPDATE mnesis_jobs SET heartbeat_at = now() - make_interval(secs => %s) "
          "WHERE status = 'running'", seconds)  # fmt: skip


async def test_a_stalled_job_with_requests_queued_behind_it_is_taken_back_in_place(
    pg_url: str, queues: tuple[WorkerQueue, WorkerQueue], capsys: pytest.CaptureFixture[str]
) -> None:
    dead, alive = queues
    job_id = await request_compaction(pg_url, SESSION)
    assert await _state(pg_url) == "queued"
    claimed = await dead.claim(["mnesis"])
    assert claimed is not None and claimed.id == job_id
    assert await _state(pg_url) == "running"
    await dead.record_attempt(claimed, "running")
    # Turns keep asking while it runs: the same row, marked to run again.
    assert {await request_compaction(pg_url, SESSION) for _ in range(3)} == {job_id}
    assert await alive.claim(["mnesis"]) is None
    _age_heartbeats(pg_url, 3600)

    assert await _state(pg_url) == "queued"  # to a waiting turn: nobody runs it
    (shown,) = await list_jobs(pg_url, stalled_after=30)
    assert (shown.id, shown.status, shown.worker, shown.again) == (job_id, "stalled", "dead", True)
    assert await asyncio.to_thread(run, ["jobs", "--db", pg_url]) == 0
    table = capsys.readouterr().out
    assert "stalled" in table and "dead" in table
    assert await recover_stalled_jobs(alive, 30) == 1
    assert await recover_stalled_jobs(alive, 30) == 0
    (shown,) = await list_jobs(pg_url)
    assert (shown.status, shown.recovered, shown.failures) == ("queued", 1, 1)
    assert "no heartbeat" in (shown.last_error or "")

    again = await alive.claim(["mnesis"])
    assert again is not None and (again.id, again.attempt) == (job_id, 2)
    # The dead worker wakes up: its lease no longer holds, nothing it writes counts.
    assert await dead.heartbeat([job_id]) == set()
    assert await dead.succeeded(claimed) is None
    assert await dead.release(claimed) is None
    assert await alive.succeeded(again) == "succeeded"
    runs = query(pg_url, "SELECT worker, status FROM mnesis_job_attempts ORDER BY attempt")
    assert runs == [("dead", "lost")]


async def test_a_request_while_the_job_runs_queues_it_once_more_after(
    pg_url: str, queues: tuple[WorkerQueue, WorkerQueue]
) -> None:
    _, worker = queues
    job_id = await request_compaction(pg_url, SESSION)
    first = await worker.claim(["mnesis"])
    assert first is not None
    assert await request_compaction(pg_url, SESSION) == job_id
    assert await worker.succeeded(first) == "queued"
    second = await worker.claim(["mnesis"])
    assert second is not None and (second.id, second.attempt) == (job_id, 2)
    assert await worker.succeeded(second) == "succeeded"
    assert await request_compaction(pg_url, SESSION) != job_id


async def test_failures_back_off_and_end_failed_and_a_lost_job_counts_as_one(
    pg_url: str, queues: tuple[WorkerQueue, WorkerQueue]
) -> None:
    dead, alive = queues
    job_id = await request_compaction(pg_url, SESSION)
    for expected in ("queued", "failed"):
        claimed = await alive.claim(["mnesis"])
        assert claimed is not None
        status = await alive.failed(claimed, "boom", final=False, delay=0, max_attempts=2)
        assert status == expected
    assert await alive.claim(["mnesis"]) is None
    retried = await request_compaction(pg_url, SESSION)
    assert retried != job_id
    claimed = await alive.claim(["mnesis"])
    assert claimed is not None
    assert await alive.failed(claimed, "later", final=False, delay=3600, max_attempts=5) == (
        "queued"
    )
    assert await alive.claim(["mnesis"]) is None  # waits for its backoff
    query(pg_url, "UPDATE mnesis_jobs SET run_after = now() WHERE id = %s", retried)
    claimed = await dead.claim(["mnesis"])
    assert claimed is not None
    _age_heartbeats(pg_url, 3600)
    assert await recover_stalled_jobs(alive, 30, max_attempts=2) == 1
    (shown,) = await list_jobs(pg_url, ("failed",), limit=1)
    assert (shown.id, shown.failures, shown.recovered) == (retried, 2, 1)
