"""Integrity under concurrent writes: the checker finds nothing, during or after.

* A session family (a root and 49 children made with ``spawn_child``) on one
  database through one pool: 50 tasks record long tool-heavy turns in a 32k window,
  so background compaction runs in many sessions while the others write, and a
  checker task checks the whole store again and again while they do.
* One session whose ``record`` is called from several tasks at once while other
  tasks call ``compact()``.
"""

from __future__ import annotations

import asyncio

from mnesis import MnesisEvent, MnesisSession, RecordResult, StorePool
from mnesis.integrity import IntegrityChecker, IntegrityReport
from mnesis.llm import FakeLLM
from mnesis.testing import SESSIONS, generate, replay
from tests.backends import fetch
from tests.compaction import lineage_report, small_window_config

WRITERS = 50
TURNS_PER_WRITER = 20
FIXTURE = "webapp_auth"


def seqs(db_path: str) -> dict[str, tuple[str, int]]:
    """``message_id -> (session_id, seq)`` read with plain SQL."""
    return {m: (s, q) for m, s, q in fetch(db_path, "SELECT id, session_id, seq FROM messages")}


class TestASessionFamilyWritingAtOnce:
    async def test_50_writers_with_background_compaction_leave_zero_violations(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM(delay_seconds=0.001, chunk_chars=64)
        root = await MnesisSession.create(
            model="fake/family", db_path=db_path, pool=pool, llm=llm, config=small_window_config()
        )
        children = [
            await root.spawn_child(agent=f"worker-{i}", system_prompt=f"You are worker {i}.")
            for i in range(WRITERS - 1)
        ]
        family = [root, *children]
        assert pool.open_count() == 1
        compactions: list[str] = []
        for session in family:
            session.subscribe(
                MnesisEvent.COMPACTION_COMPLETED,
                lambda _e, payload: compactions.append(payload["result"]["session_id"]),
            )
        conversation = generate(SESSIONS[FIXTURE])
        writing = True
        checks: list[IntegrityReport] = []

        async def write(index: int, session: MnesisSession) -> list[str]:
            start = (index * 5) % (len(conversation.turns) - TURNS_PER_WRITER)
            stored = await replay(session, conversation, start=start, stop=start + TURNS_PER_WRITER)
            return stored.message_ids

        async def check_while_writing() -> None:
            checker = IntegrityChecker(root.store)
            while writing:
                checks.append(await checker.run())
                await asyncio.sleep(0.01)

        checker_task = asyncio.create_task(check_while_writing())
        written = await asyncio.gather(*[write(i, s) for i, s in enumerate(family)])
        writing = False
        await checker_task
        await asyncio.gather(*[s.close() for s in family])

        store = await pool.acquire(db_path=db_path)
        try:
            report = await IntegrityChecker(store, check_tokens=True).run()
            for session in family:
                assert (await lineage_report(store, db_path, session.id)).problems == []
            records = {s.id: await store.get_session(s.id) for s in family}
        finally:
            await store.close()
        print(
            f"\n{WRITERS} writers x {TURNS_PER_WRITER} turns: {len(compactions)} background "
            f"compactions in {len(set(compactions))} sessions; {len(checks)} checks while "
            f"writing; final check {report.sessions_per_second:,.0f} sessions/s"
        )
        assert report.violations == []
        assert report.sessions_checked == WRITERS
        assert [c.violations for c in checks if c.violations] == []
        # At least one whole check ran while the writers wrote. How many fit is timing:
        # on PostgreSQL the checker's snapshots queue for pooled connections behind 50
        # writers, so a check takes longer than on SQLite's separate reader.
        assert checks
        assert len(set(compactions)) >= WRITERS // 2, "background compaction hardly ran"
        assert all(records[c.id].parent_id == root.id for c in children)
        stored = seqs(db_path)
        for session, ids in zip(family, written, strict=True):
            assert len(ids) == 2 * TURNS_PER_WRITER
            assert all(stored[m][0] == session.id for m in ids)
            assert [stored[m][1] for m in ids] == sorted(stored[m][1] for m in ids)


class TestOneSessionWithConcurrentCalls:
    async def test_concurrent_records_and_compactions_leave_zero_violations(
        self, db_path: str, pool: StorePool
    ) -> None:
        session = await MnesisSession.create(
            model="fake/busy",
            db_path=db_path,
            pool=pool,
            llm=FakeLLM(delay_seconds=0.001),
            config=small_window_config(),
        )
        turns = generate(SESSIONS[FIXTURE]).turns
        results: list[RecordResult] = []
        compacted: list[int] = []

        async def recorder(task: int) -> None:
            for j in range(12):
                turn = turns[task * 12 + j]
                results.append(await session.record(list(turn.user), list(turn.assistant)))

        async def compactor() -> None:
            for _ in range(4):
                compacted.append((await session.compact()).level_used)
                await asyncio.sleep(0.02)

        await asyncio.gather(*[recorder(t) for t in range(4)], compactor(), compactor())
        report = await IntegrityChecker(session.store, check_tokens=True).run(session.id)
        lineage = await lineage_report(session.store, db_path, session.id)
        await session.close()

        assert report.violations == []
        assert lineage.problems == []
        assert any(level > 0 for level in compacted)
        stored = seqs(db_path)
        for r in results:  # each turn's two messages are adjacent: one transaction each
            assert stored[r.assistant_message_id][1] == stored[r.user_message_id][1] + 1
        assert len(results) == 48
        assert set(lineage.conversation_ids) == {
            m for r in results for m in (r.user_message_id, r.assistant_message_id)
        }
