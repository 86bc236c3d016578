"""Per-session advisory locks and concurrent appends on PostgreSQL."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import psycopg
import pytest

from mnesis.compaction.engine import CompactionEngine
from mnesis.errors import CompactionLockedError
from mnesis.events.bus import EventBus
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.store.postgres.locks import compaction_lock_key
from mnesis.tokens.estimator import TokenEstimator
from tests.workers import ROOT, Paused, grow_session, integrity_ok, query, worker_config

pytestmark = pytest.mark.postgres


class _Gated:
    """Pauses the first summary until ``go`` is set (``started`` tells it began)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go = asyncio.Event()
        self.summariser = Paused(self._wait)

    async def _wait(self) -> None:
        self.started.set()
        await self.go.wait()


def _engine(store: ImmutableStore) -> CompactionEngine:
    return CompactionEngine(
        store,
        SummaryDAGStore(store),
        TokenEstimator(),
        EventBus(),
        worker_config(),
        session_model="fake/model",
    )


async def test_a_second_compactor_of_a_session_gets_a_retryable_conflict_at_once(
    pg_url: str,
) -> None:
    session_id = await grow_session(pg_url, 40)
    first_store = await ImmutableStore.open(pg_url)
    second_store = await ImmutableStore.open(pg_url)
    try:
        first = _engine(first_store)
        gated = _Gated()
        first.summarisers = [gated.summariser]
        running = asyncio.create_task(first.run_compaction(session_id, force=True))
        await gated.started.wait()
        second = _engine(second_store)
        with pytest.raises(CompactionLockedError):
            await second.run_compaction(session_id, force=True, raise_conflict=True)
        reported = await second.run_compaction(session_id, force=True)
        assert reported.error is not None and "lock" in reported.error
        assert reported.level_used == 0
        gated.go.set()
        result = await running
        assert result.error is None and result.level_used >= 1
        again = await second.run_compaction(session_id, force=True)
        assert again.error is None
    finally:
        await first_store.close()
        await second_store.close()
    assert await integrity_ok(pg_url, session_id) == []


async def test_the_advisory_lock_is_released_when_its_block_ends_or_fails(pg_url: str) -> None:
    session_id = await grow_session(pg_url, 1)
    store = await ImmutableStore.open(pg_url)
    try:
        with pytest.raises(RuntimeError):
            async with store.compaction_lock(session_id, "a", 60):
                raise RuntimeError("boom")
        async with store.compaction_lock(session_id, "b", 60):
            with pytest.raises(CompactionLockedError):
                async with store.compaction_lock(session_id, "c", 60):
                    pass
        async with store.compaction_lock(session_id, "d", 60):
            pass
    finally:
        await store.close()


async def test_the_advisory_lock_is_gone_on_the_server_when_its_block_ends(pg_url: str) -> None:
    """Unlocked before its connection closes: closing alone leaves the lock held until the
    server's backend exits, a moment later, and a run started right after (in this
    process or another) would find it taken."""
    session_id = await grow_session(pg_url, 1)
    key = compaction_lock_key(session_id)
    classid, objid = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    held = (
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
        "AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 1"
    )
    store = await ImmutableStore.open(pg_url)
    try:
        with psycopg.connect(pg_url, autocommit=True) as checker:
            for n in range(20):
                async with store.compaction_lock(session_id, f"run-{n}", 60):
                    assert checker.execute(held, (classid, objid)).fetchall() == [(1,)]
                assert checker.execute(held, (classid, objid)).fetchall() == [(0,)]
    finally:
        await store.close()


_APPENDER = """
import asyncio, sys
from tests.workers import grow_session
asyncio.run(grow_session(sys.argv[1], int(sys.argv[3]), session_id=sys.argv[2]))
"""


def test_appends_from_many_processes_keep_seq_and_positions_unique_and_gap_free(
    pg_url: str,
) -> None:
    session_id = asyncio.run(grow_session(pg_url, 1))
    procs = [
        subprocess.Popen([sys.executable, "-c", _APPENDER, pg_url, session_id, "12"], cwd=ROOT)
        for _ in range(4)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0] * 4
    seqs = [
        r[0]
        for r in query(
            pg_url, "SELECT seq FROM messages WHERE session_id = %s ORDER BY seq", session_id
        )
    ]
    assert len(seqs) == 2 + 4 * 12 * 2
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    positions = [
        r[0]
        for r in query(
            pg_url,
            "SELECT position FROM context_items WHERE session_id = %s ORDER BY position",
            session_id,
        )
    ]
    assert len(positions) == len(set(positions)) == len(seqs)
    assert asyncio.run(integrity_ok(pg_url, session_id)) == []
