"""Jobs and worker processes on PostgreSQL: no-ops, SIGTERM, SIGKILL, worker mode."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest

from mnesis import MnesisSession
from mnesis.cli import run
from mnesis.llm import FakeLLM
from mnesis.store.immutable import ImmutableStore
from mnesis.workers import JobRunner, WorkerOptions, ensure_queue_schema, list_jobs
from tests.workers import (
    grow_session,
    integrity_ok,
    query,
    start_worker,
    wait_for,
    worker_config,
)

pytestmark = pytest.mark.postgres


async def _request(url: str, session_id: str) -> int:
    store = await ImmutableStore.open(url)
    try:
        queue = store.compaction_queue()
        assert queue is not None
        return await queue.request(session_id, "threshold")
    finally:
        await store.close()


def _status(url: str, job_id: int) -> str:
    return str(query(url, "SELECT status FROM mnesis_jobs WHERE id = %s", job_id)[0][0])


def _summaries(url: str, session_id: str) -> int:
    return int(query(url, "SELECT count(*) FROM summaries WHERE session_id = %s", session_id)[0][0])


async def test_a_job_for_a_session_under_its_threshold_is_a_no_op(pg_url: str) -> None:
    session_id = await grow_session(pg_url, 3)
    store = await ImmutableStore.open(pg_url)
    try:
        runner = JobRunner(store, WorkerOptions(), None)
        outcome = await runner.compact(session_id, "threshold", "c-1")
        assert outcome["outcome"] == "noop"
        assert outcome["token_after"] == outcome["token_before"]
    finally:
        await store.close()
    assert _summaries(pg_url, session_id) == 0


async def test_at_most_one_compaction_job_is_queued_per_session(pg_url: str) -> None:
    await ensure_queue_schema(pg_url)
    session_id = await grow_session(pg_url, 1)
    first = await _request(pg_url, session_id)
    assert await _request(pg_url, session_id) == first
    jobs = await list_jobs(pg_url)
    assert [(j.id, j.status, j.session_id) for j in jobs] == [(first, "queued", session_id)]


async def test_sigterm_lets_the_worker_finish_its_job_while_another_process_appends(
    pg_url: str, tmp_path: Path
) -> None:
    await ensure_queue_schema(pg_url)
    session_id = await grow_session(pg_url, 35)
    worker = start_worker(pg_url, tmp_path, "w1", "1.0")
    try:
        job_id = await _request(pg_url, session_id)
        await wait_for((tmp_path / "w1.started").exists, "the job to start")
        await grow_session(pg_url, 6, session_id=session_id)
        worker.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(worker.wait, 300) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    assert _status(pg_url, job_id) == "succeeded"
    runs = query(pg_url, "SELECT status FROM mnesis_job_attempts WHERE job_id = %s", job_id)
    assert runs == [("succeeded",)]
    assert _summaries(pg_url, session_id) >= 1
    assert await integrity_ok(pg_url, session_id) == []


async def test_over_the_hard_threshold_with_no_worker_the_turn_compacts_inline(
    pg_url: str,
) -> None:
    await ensure_queue_schema(pg_url)
    session_id = await grow_session(pg_url, 50)
    config = worker_config(mode="worker", worker_pickup_seconds=0.5)
    session = await MnesisSession.load(session_id, db_path=pg_url, llm=FakeLLM(), config=config)
    try:
        usable = 26_000
        assert session.context_tokens > usable
        await session.send("one more question")
        assert session.context_tokens < usable
    finally:
        await session.close()
    (job,) = await list_jobs(pg_url)
    assert (job.session_id, job.status) == (session_id, "queued")
    store = await ImmutableStore.open(pg_url)
    try:
        outcome = await JobRunner(store, WorkerOptions(), None).compact(
            session_id, "threshold", "c-2"
        )
    finally:
        await store.close()
    assert outcome["outcome"] == "noop"
    assert await integrity_ok(pg_url, session_id) == []


async def test_mnesis_jobs_lists_the_queue_and_refuses_sqlite(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await ensure_queue_schema(pg_url)
    session_id = await grow_session(pg_url, 1)
    job_id = await _request(pg_url, session_id)
    assert await asyncio.to_thread(run, ["jobs", "--db", pg_url, "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["id"], listed["status"], listed["session_id"]) == (
        job_id,
        "queued",
        session_id,
    )
    assert listed["attempts"] == 0 and listed["last_error"] is None
    assert await asyncio.to_thread(run, ["jobs", "--db", str(tmp_path / "x.db")]) == 1
    assert "PostgreSQL" in capsys.readouterr().err
