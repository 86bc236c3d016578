"""Nothing is kept per turn forever, and no commit pays for a whole WAL checkpoint.

(Issue 17, item 5.) Memory and tail latency over 50,000 turns are measured in
``benchmarks/bench_memory.py``; these tests pin the mechanisms.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnesis import MnesisSession, StorePool
from mnesis._session import turns
from mnesis.store.sqlite.checkpoint import CHECKPOINT_EVERY_COMMITS
from mnesis.testing import FakeLLM
from tests.store.sqlite.helpers import sqlite_db


@pytest.fixture
async def session(db_path: str, pool: StorePool, fake_llm: FakeLLM) -> AsyncIterator[MnesisSession]:
    s = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool, llm=fake_llm)
    yield s
    await s.close()


def _wal_bytes(db_path: str) -> int:
    wal = Path(db_path + "-wal")
    return wal.stat().st_size if wal.exists() else 0


class TestHistoryWindow:
    async def test_history_keeps_only_the_most_recent_turns(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(turns, "HISTORY_WINDOW", 5, raising=False)
        session = await MnesisSession.create(
            model="fake/m", db_path=db_path, pool=pool, llm=fake_llm
        )
        recorded = [await session.record(f"question {i}", f"answer {i}") for i in range(12)]
        history = session.history()
        assert [h.turn_index for h in history] == [7, 8, 9, 10, 11]
        assert [h.user_message_id for h in history] == [r.user_message_id for r in recorded[7:]]
        # Every turn is still in the store.
        assert len(await session.messages()) == 24
        await session.close()

    async def test_sent_and_recorded_turns_share_one_index_sequence_past_the_window(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(turns, "HISTORY_WINDOW", 2, raising=False)
        session = await MnesisSession.create(
            model="fake/m", db_path=db_path, pool=pool, llm=fake_llm
        )
        await session.record("one", "1")
        await session.send("two")
        sent = await session.send("three")
        assert [h.turn_index for h in session.history()] == [1, 2]
        assert session.history()[-1].assistant_message_id == sent.message_id
        await session.close()


class TestCheckpointsOffTheCommitPath:
    @pytest.mark.sqlite_only("SQLite's write-ahead log and its checkpoints")
    async def test_commits_do_not_checkpoint_and_the_wal_stays_bounded(
        self, session: MnesisSession, db_path: str, pool: StorePool
    ) -> None:
        store = await pool.acquire(db_path=db_path)  # the session's file, shared
        db = sqlite_db(store)
        autocheckpoint = await db.read(
            lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        )
        assert autocheckpoint == 0
        text = "lorem ipsum dolor sit amet " * 40
        for i in range(CHECKPOINT_EVERY_COMMITS):
            await session.record(f"{i} {text}", f"{i} {text}")
        wal_before = _wal_bytes(db_path)
        checkpointer = db._checkpointer
        assert checkpointer is not None
        # The last commit woke the background checkpoint; wait for it (a hang guard). Its
        # count, not its "finished" flag: a background commit of the session (e.g. its
        # soft compaction) may already have run the catch-up step, which clears the flag.
        for _ in range(600):
            if checkpointer.checkpoints:
                break
            await asyncio.sleep(0.1)
        assert checkpointer.checkpoints == 1
        await session.record("catch up", "the commit after it copies the rest")
        await session.record("start over", "this commit starts the WAL from its beginning")
        frames, page_size = await db.read(
            lambda conn: (
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1],
                conn.execute("PRAGMA page_size").fetchone()[0],
            )
        )
        # The WAL now holds one turn, not the 64 before it.
        assert 0 < frames * page_size < wal_before / 8
        await session.close()
        await store.close()
        with sqlite3.connect(db_path) as conn:
            assert (
                conn.execute("SELECT count(*) FROM messages WHERE role = 'user'").fetchone()[0]
                == CHECKPOINT_EVERY_COMMITS + 2
            )
        assert _wal_bytes(db_path) == 0
