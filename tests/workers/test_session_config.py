"""One config per session: an agent loading a session with another config stores it, so
workers compact with the agent's numbers (window, thresholds, compaction model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.errors import InvalidArgumentError, SessionNotFoundError
from mnesis.llm import FakeLLM
from mnesis.store.immutable import ImmutableStore
from mnesis.workers import JobRunner, WorkerOptions, ensure_queue_schema, list_jobs
from tests.workers import integrity_ok, worker_config


async def _create_with_default_window(db: str, turns: int) -> str:
    config = MnesisConfig(compaction=CompactionConfig(auto=False, compaction_model="extractive"))
    session = await MnesisSession.create(
        model="fake/model", db_path=db, llm=FakeLLM(), config=config
    )
    try:
        for i in range(turns):
            await session.record(f"question {i} " + "lorem ipsum " * 120, f"answer {i} " * 150)
    finally:
        await session.close()
    return session.id


@pytest.mark.postgres
async def test_a_session_loaded_with_a_smaller_window_is_compacted_by_workers_at_it(
    pg_url: str,
) -> None:
    await ensure_queue_schema(pg_url)
    session_id = await _create_with_default_window(pg_url, 26)
    agent_config = worker_config(mode="worker", worker_pickup_seconds=1.0)
    session = await MnesisSession.load(
        session_id, db_path=pg_url, llm=FakeLLM(), config=agent_config
    )
    try:
        await session.record("one more question", "one more answer")
    finally:
        await session.close()
    (job,) = await list_jobs(pg_url)
    assert (job.session_id, job.status) == (session_id, "queued")
    store = await ImmutableStore.open(pg_url)
    try:
        outcome = await JobRunner(store, WorkerOptions(), None).compact(
            session_id, "threshold", "c-window"
        )
        record = await store.get_session(session_id)
    finally:
        await store.close()
    assert outcome["outcome"] == "committed", outcome
    assert outcome["token_after"] < outcome["token_before"]
    assert record.config is not None
    assert record.config["model_overrides"]["context_limit"] == 32_000
    assert await integrity_ok(pg_url, session_id) == []


async def test_loading_with_a_config_stores_it_and_loading_without_one_reads_it(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "s.db")
    session_id = await _create_with_default_window(db, 1)
    wanted = worker_config(soft_threshold_fraction=0.5)
    session = await MnesisSession.load(session_id, db_path=db, llm=FakeLLM(), config=wanted)
    await session.close()
    again = await MnesisSession.load(session_id, db_path=db, llm=FakeLLM())
    try:
        assert again.config.model_overrides == {"context_limit": 32_000, "max_output_tokens": 2_000}
        assert again.config.compaction.soft_threshold_fraction == 0.5
    finally:
        await again.close()


async def test_set_session_config_checks_its_arguments_before_writing(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    session_id = await _create_with_default_window(db, 0)
    store = await ImmutableStore.open(db)
    try:
        before = (await store.get_session(session_id)).config
        with pytest.raises(InvalidArgumentError):
            await store.set_session_config(session_id, "not a dict")  # type: ignore[arg-type]
        with pytest.raises(SessionNotFoundError):
            await store.set_session_config("sess_01JMISSING0000000000000000", {})
        assert (await store.get_session(session_id)).config == before
    finally:
        await store.close()
