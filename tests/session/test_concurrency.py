"""Concurrency: many sessions on one file, concurrent turns of one session, and
several connections and processes writing the same file.

Results are read back with plain SQL so the checks do not depend on the
store code under test.
"""

from __future__ import annotations

import asyncio
import sys
from collections import defaultdict
from pathlib import Path

from mnesis import CompactionConfig, MnesisConfig, MnesisSession, StorePool
from mnesis.llm import FakeLLM, Respond
from tests.backends import fetch, file_is_whole

CHILD = Path(__file__).with_name("child_process.py")
NO_AUTO_COMPACTION = MnesisConfig(compaction=CompactionConfig(auto=False))


def read_layout(db_path: str) -> tuple[dict[str, list[tuple[int, str, str]]], dict[str, list[int]]]:
    """Per session: (seq, role, id) of its messages and its context positions, in order."""
    messages: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for session_id, seq, role, message_id in fetch(
        db_path, "SELECT session_id, seq, role, id FROM messages ORDER BY session_id, seq"
    ):
        messages[session_id].append((seq, role, message_id))
    positions: dict[str, list[int]] = defaultdict(list)
    for session_id, position in fetch(
        db_path, "SELECT session_id, position FROM context_items ORDER BY session_id, position"
    ):
        positions[session_id].append(position)
    return messages, positions


class TestManySessionsOnOneFile:
    async def test_200_sessions_recording_20_turns_each_keep_gap_free_sequences(
        self, db_path: str, pool: StorePool
    ) -> None:
        sessions = await asyncio.gather(
            *[
                MnesisSession.create(
                    model="fake/many",
                    db_path=db_path,
                    pool=pool,
                    llm=FakeLLM(),
                    config=NO_AUTO_COMPACTION,
                )
                for _ in range(200)
            ]
        )
        assert pool.open_count() == 1

        async def work(index: int, session: MnesisSession) -> list[str]:
            ids: list[str] = []
            for turn in range(20):
                result = await session.record(f"s{index} user {turn}", f"s{index} reply {turn}")
                ids += [result.user_message_id, result.assistant_message_id]
            return ids

        returned = await asyncio.gather(*[work(i, s) for i, s in enumerate(sessions)])
        await asyncio.gather(*[s.close() for s in sessions])
        assert pool.open_count() == 0

        messages, positions = read_layout(db_path)
        assert set(messages) == {s.id for s in sessions}
        all_ids = [m[2] for rows in messages.values() for m in rows]
        assert len(all_ids) == len(set(all_ids)) == 200 * 40
        for session, ids in zip(sessions, returned, strict=True):
            rows = messages[session.id]
            assert [r[0] for r in rows] == list(range(1, 41)), session.id
            assert [r[1] for r in rows] == ["user", "assistant"] * 20
            assert [r[2] for r in rows] == ids
            assert positions[session.id] == list(range(1, 41)), session.id
        assert file_is_whole(db_path)

    async def test_sessions_do_not_see_each_others_messages(
        self, db_path: str, pool: StorePool
    ) -> None:
        sessions = [
            await MnesisSession.create(
                model="fake/many", db_path=db_path, pool=pool, llm=FakeLLM(delay_seconds=0.001)
            )
            for _ in range(5)
        ]
        await asyncio.gather(
            *[s.send(f"message for session {i}") for i, s in enumerate(sessions) for _ in range(3)]
        )
        for i, session in enumerate(sessions):
            users = [m.text for m in await session.messages() if m.role == "user"]
            assert users == [f"message for session {i}"] * 3
            await session.close()

    async def test_turns_of_different_sessions_overlap(self, db_path: str, pool: StorePool) -> None:
        llm = FakeLLM(chunk_chars=4, delay_seconds=0.02)  # turns long enough to overlap
        sessions = [
            await MnesisSession.create(model="fake/many", db_path=db_path, pool=pool, llm=llm)
            for _ in range(4)
        ]
        await asyncio.gather(*[s.send("a question that takes a while") for s in sessions])
        assert llm.max_in_flight > 1
        for session in sessions:
            await session.close()


class TestConcurrentTurnsOfOneSession:
    async def test_concurrent_sends_are_serialised_into_whole_turns(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM(chunk_chars=3, delay_seconds=0.001)
        session = await MnesisSession.create(model="fake/one", db_path=db_path, pool=pool, llm=llm)
        results = await asyncio.gather(*[session.send(f"question {i}") for i in range(8)])
        assert llm.max_in_flight == 1
        messages = await session.messages()
        assert [m.role for m in messages] == ["user", "assistant"] * 8
        for user, assistant in zip(messages[::2], messages[1::2], strict=True):
            assert assistant.message.parent_id == user.id
        by_user = {r.user_message_id: r for r in results}
        for user, assistant in zip(messages[::2], messages[1::2], strict=True):
            assert by_user[user.id].message_id == assistant.id
            assert assistant.text == by_user[user.id].text
        await session.close()

    async def test_concurrent_send_and_record_do_not_interleave(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM(chunk_chars=2, delay_seconds=0.001)
        llm.script(Respond("a streamed answer"))
        session = await MnesisSession.create(model="fake/one", db_path=db_path, pool=pool, llm=llm)
        turn, first, second = await asyncio.gather(
            session.send("streamed question"),
            session.record("recorded question 1", "recorded answer 1"),
            session.record("recorded question 2", "recorded answer 2"),
        )
        messages = await session.messages()
        assert [m.role for m in messages] == ["user", "assistant"] * 3
        pairs = {(u.id, a.id) for u, a in zip(messages[::2], messages[1::2], strict=True)}
        assert pairs == {
            (turn.user_message_id, turn.message_id),
            (first.user_message_id, first.assistant_message_id),
            (second.user_message_id, second.assistant_message_id),
        }
        assert len(session.history()) == 3
        await session.close()


class TestSeveralWritersOnOneFile:
    async def test_two_pools_in_one_process_write_without_lock_errors(self, db_path: str) -> None:
        pools = [StorePool(), StorePool()]
        try:
            sessions = [
                await MnesisSession.create(
                    model="fake/pools",
                    db_path=db_path,
                    pool=pools[i % 2],
                    llm=FakeLLM(),
                    config=NO_AUTO_COMPACTION,
                )
                for i in range(6)
            ]

            async def work(session: MnesisSession) -> None:
                for turn in range(20):
                    await session.record(f"user {turn}", f"reply {turn}")

            await asyncio.gather(*[work(s) for s in sessions])
            for session in sessions:
                await session.close()
        finally:
            for p in pools:
                await p.close_all()
        messages, positions = read_layout(db_path)
        for session in sessions:
            assert [r[0] for r in messages[session.id]] == list(range(1, 41))
            assert positions[session.id] == list(range(1, 41))
        assert file_is_whole(db_path)

    async def test_two_processes_write_the_same_new_file_without_lock_errors(
        self, unopened_db_path: str
    ) -> None:
        db_path = unopened_db_path  # on SQLite, no file yet: the two children create it
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                str(CHILD),
                "record",
                db_path,
                "100",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            for _ in range(2)
        ]
        try:
            # Both children import everything first, then open the (not yet
            # existing) file at the same moment: migration and writes race.
            for proc in procs:
                assert proc.stdout is not None
                line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
                assert line.strip() == b"READY"
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write(b"GO\n")
                await proc.stdin.drain()
            outputs = [await asyncio.wait_for(p.communicate(), timeout=120) for p in procs]
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()

        session_ids = []
        for proc, (out, err) in zip(procs, outputs, strict=True):
            stderr = err.decode(errors="replace")
            assert "locked" not in stderr.lower(), stderr
            assert proc.returncode == 0, stderr
            session_ids.append(out.decode().split("DONE", 1)[1].strip())
        messages, positions = read_layout(db_path)
        assert set(messages) == set(session_ids)
        for session_id in session_ids:
            assert [r[0] for r in messages[session_id]] == list(range(1, 201))
            assert [r[1] for r in messages[session_id]] == ["user", "assistant"] * 100
            assert positions[session_id] == list(range(1, 201))
        assert file_is_whole(db_path)
