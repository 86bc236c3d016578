"""Workers on PostgreSQL: advisory locks, the job queue, worker processes under faults."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg

from mnesis import MnesisSession
from mnesis.compaction.candidates import CondensedCandidate, SummaryCandidate, SummaryTarget
from mnesis.compaction.summariser import ExtractiveSummariser
from mnesis.integrity import IntegrityChecker
from mnesis.llm import FakeLLM
from mnesis.models.message import MessageWithParts
from mnesis.store.base import SummaryRecord
from mnesis.store.immutable import ImmutableStore
from tests.compaction import small_window_config

ROOT = Path(__file__).resolve().parents[2]


def worker_config(**compaction: Any) -> Any:
    """A small window, offline extractive summaries, soft threshold at 60%."""
    return small_window_config(compaction_model="extractive", **compaction)


async def grow_session(
    url: str, turns: int, *, session_id: str | None = None, **compaction: Any
) -> str:
    """Create (or load) a session on ``url`` and record ``turns`` large turns (no
    in-process compaction); its id."""
    cfg = worker_config(auto=False, **compaction)
    if session_id is None:
        session = await MnesisSession.create(
            model="fake/model", db_path=url, llm=FakeLLM(), config=cfg
        )
    else:
        session = await MnesisSession.load(session_id, db_path=url, llm=FakeLLM(), config=cfg)
    try:
        for i in range(turns):
            await session.record(f"question {i} " + "lorem ipsum " * 120, f"answer {i} " * 150)
    finally:
        await session.close()
    return session.id


async def integrity_ok(url: str, session_id: str) -> list[str]:
    """Violations the integrity checker finds in the session ([] when whole)."""
    store = await ImmutableStore.open(url)
    try:
        report = await IntegrityChecker(store).run(session_id)
    finally:
        await store.close()
    return [f"{v.kind.value}: {v.detail}" for v in report.violations]


def query(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows of one statement on ``url`` (synchronous; [] for a statement without rows)."""
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, args)
        return list(cur.fetchall()) if cur.description else []


def start_worker(url: str, tmp: Path, name: str, *args: str) -> subprocess.Popen[bytes]:
    """``python -m tests.workers.worker_main URL MARKER_DIR NAME ...`` in the background."""
    log = open(tmp / f"{name}.log", "wb")  # noqa: SIM115 - the child owns it
    return subprocess.Popen(
        [sys.executable, "-m", "tests.workers.worker_main", url, str(tmp), name, *args],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


async def wait_for(predicate: Any, what: str, timeout: float = 120.0) -> None:
    """Poll ``predicate()`` (sync, or returning an awaitable) until true; fail with
    ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.2)


async def request_compaction(url: str, session_id: str) -> int:
    """Queue a compaction job of the session as a turn over its soft threshold does."""
    store = await ImmutableStore.open(url)
    try:
        queue = store.compaction_queue()
        assert queue is not None
        return await queue.request(session_id, "threshold")
    finally:
        await store.close()


async def compaction_settled(url: str, session_id: str) -> bool:
    """True once the session has a summary and no queued or running compaction job."""
    store = await ImmutableStore.open(url)
    try:
        queue = store.compaction_queue()
        assert queue is not None
        if await queue.state(session_id) is not None:
            return False
    finally:
        await store.close()
    found = query(url, "SELECT count(*) FROM summaries WHERE session_id = %s", session_id)
    return int(found[0][0]) > 0


class Paused:
    """A ``Summariser``: the extractive one (level 1), after awaiting ``before()`` on
    every leaf summary."""

    level = 1
    uses_model = False

    def __init__(self, before: Callable[[], Awaitable[None]]) -> None:
        self.inner = ExtractiveSummariser(level=1)
        self.input_window = self.inner.input_window
        self.before = before

    async def summarise(
        self, messages: Sequence[MessageWithParts], target: SummaryTarget
    ) -> SummaryCandidate | None:
        await self.before()
        return await self.inner.summarise(messages, target)

    async def condense(
        self, summaries: Sequence[SummaryRecord], target: SummaryTarget
    ) -> CondensedCandidate | None:
        return await self.inner.condense(summaries, target)


async def stop_workers(workers: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM the workers still running and wait for them (SIGKILL after a minute)."""
    for proc in workers:
        if proc.poll() is None:
            proc.terminate()
    for proc in workers:
        try:
            await asyncio.to_thread(proc.wait, 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            await asyncio.to_thread(proc.wait, 60)
