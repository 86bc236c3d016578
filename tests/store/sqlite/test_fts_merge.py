"""The message full-text index is merged into few segments off the commit path."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from mnesis import MnesisSession, StorePool
from mnesis.store.sqlite import fts_merge
from mnesis.store.sqlite.checkpoint import CHECKPOINT_EVERY_COMMITS
from mnesis.store.sqlite.fts_merge import MergeState, merge_step, segment_count
from mnesis.testing import FakeLLM
from tests.store.sqlite.helpers import sqlite_db

pytestmark = pytest.mark.sqlite_only("SQLite's FTS5 segments and the checkpoint thread")

WORDS = ["kafka", "consumer", "lag", "port", "8443", "migration", "pytest", "deploy"]


async def _record_turns(session: MnesisSession, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        word = WORDS[i % len(WORDS)]
        await session.record(f"turn {i}: about {word}", f"noted {word} number {i}")


async def _recorded(db_path: str, pool: StorePool, fake_llm: FakeLLM, turns: int) -> None:
    session = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool, llm=fake_llm)
    await _record_turns(session, turns)
    await session.close()


def _hits(db_path: str, query: str) -> list[int]:
    with sqlite3.connect(db_path) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM message_parts_fts WHERE message_parts_fts MATCH ? "
                "ORDER BY rowid",
                (query,),
            )
        ]


@pytest.fixture
def low_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    # A few dozen turns leave a handful of segments; the thresholds scale down with them.
    monkeypatch.setattr(fts_merge, "MAX_SEGMENTS", 2)
    monkeypatch.setattr(fts_merge, "DONE_SEGMENTS", 1)


@pytest.mark.usefixtures("low_thresholds")
class TestMergeStep:
    async def test_steps_bring_the_index_down_and_every_query_finds_the_same_rows(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        await _recorded(db_path, pool, fake_llm, 30)
        queries = [*WORDS, "turn", "noted AND kafka", '"consumer lag"']
        before = {q: _hits(db_path, q) for q in queries}
        assert all(before[w] for w in WORDS)
        with sqlite3.connect(db_path, isolation_level=None) as conn:
            segments = segment_count(conn)
            assert segments > fts_merge.MAX_SEGMENTS
            state = MergeState()
            for _ in range(100):
                if not merge_step(conn, state):
                    break
            assert state.steps >= 1
            assert not state.merging
            assert segment_count(conn) <= fts_merge.DONE_SEGMENTS < segments
        assert {q: _hits(db_path, q) for q in queries} == before

    async def test_a_busy_database_skips_the_step_without_waiting(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        await _recorded(db_path, pool, fake_llm, 30)
        with (
            sqlite3.connect(db_path, isolation_level=None) as writer,
            sqlite3.connect(db_path, isolation_level=None) as merger,
        ):
            merger.execute("PRAGMA busy_timeout = 60000")
            writer.execute("BEGIN IMMEDIATE")
            state = MergeState()
            assert merge_step(merger, state) is False
            assert state.steps == 0 and state.merging
            assert merger.execute("PRAGMA busy_timeout").fetchone()[0] == 60000
            writer.execute("ROLLBACK")
            assert merge_step(merger, state) is True


class TestBelowTheThreshold:
    async def test_a_small_index_is_left_alone(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        await _recorded(db_path, pool, fake_llm, 2)
        with sqlite3.connect(db_path, isolation_level=None) as conn:
            assert segment_count(conn) <= fts_merge.MAX_SEGMENTS
            state = MergeState()
            assert merge_step(conn, state) is False
            assert state.steps == 0


class TestOnTheCheckpointThread:
    async def test_a_background_checkpoint_steps_the_merge(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(fts_merge, "MAX_SEGMENTS", 1)
        session = await MnesisSession.create(
            model="fake/m", db_path=db_path, pool=pool, llm=fake_llm
        )
        store = await pool.acquire(db_path=db_path)
        checkpointer = sqlite_db(store)._checkpointer
        assert checkpointer is not None
        # A step is skipped while the writer holds the database (the turns after the
        # one that requested the checkpoint may still be committing), so a few rounds.
        for round_ in range(5):
            # +1: the first commit after a finished checkpoint only resets the count.
            await _record_turns(session, CHECKPOINT_EVERY_COMMITS + 1, round_ * 1000)
            for _ in range(600):  # a hang guard: the background step finishes quickly
                if checkpointer.checkpoints > round_:
                    break
                await asyncio.sleep(0.1)
            assert checkpointer.checkpoints == round_ + 1
            if checkpointer.fts_merge.steps:
                break
        assert checkpointer.fts_merge.steps == 1
        await session.close()
        await store.close()
        assert _hits(db_path, "kafka")
