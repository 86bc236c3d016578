"""Crash durability: a process killed with SIGKILL leaves a usable, consistent database.

A child process (``child_process.py``) writes to a real store (a SQLite file or a
PostgreSQL database: both backends) and the test
kills it at a random moment. Afterwards the parent reopens the file and checks what
the session guarantees: the user message and the assistant stub of an interrupted
turn are durable, a turn recorded with ``record`` is all-or-nothing, the file passes
``PRAGMA integrity_check`` and the session accepts new turns.
"""

from __future__ import annotations

import asyncio
import random
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnesis import CompactionConfig, MnesisConfig, MnesisSession, StorePool
from mnesis.llm import FakeLLM
from tests.backends import fetch, file_is_whole

CHILD = Path(__file__).with_name("child_process.py")
USER_TEXT = "Remember the launch code: 7-alpha-9."
NO_AUTO_COMPACTION = MnesisConfig(compaction=CompactionConfig(auto=False))


@dataclass
class Child:
    proc: asyncio.subprocess.Process

    async def expect(self, prefix: str) -> str:
        """Read lines until one starts with ``prefix``; fail with stderr if the child dies."""
        assert self.proc.stdout is not None
        while True:
            raw = await asyncio.wait_for(self.proc.stdout.readline(), timeout=60)
            if not raw:
                await self.proc.wait()
                assert self.proc.stderr is not None
                err = (await self.proc.stderr.read()).decode(errors="replace")
                pytest.fail(f"child exited ({self.proc.returncode}) before {prefix!r}:\n{err}")
            line = raw.decode().strip()
            if line.startswith(prefix):
                return line[len(prefix) :].strip()

    async def kill(self) -> int:
        self.proc.send_signal(signal.SIGKILL)
        return await self.proc.wait()


Spawn = Callable[..., Awaitable[Child]]


@pytest.fixture
async def spawn() -> AsyncIterator[Spawn]:
    children: list[Child] = []

    async def _spawn(*args: str) -> Child:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(CHILD),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        child = Child(proc)
        children.append(child)
        return child

    yield _spawn
    for child in children:
        if child.proc.returncode is None:
            await child.kill()


def integrity(db_path: str) -> tuple[str, list[tuple[object, ...]]]:
    """SQLite's integrity and foreign-key checks of the file (PostgreSQL enforces its
    foreign keys on every write and has no file of ours to tear: ``ok`` when readable)."""
    if not file_is_whole(db_path):
        return "not ok", []
    if db_path.startswith(("postgresql://", "postgres://")):
        return "ok", []
    return "ok", fetch(db_path, "PRAGMA foreign_key_check")


def rows(db_path: str, sql: str, *args: object) -> list[tuple[object, ...]]:
    return fetch(db_path, sql, *args)


class TestKilledMidStream:
    @pytest.mark.parametrize("seed", range(5))
    async def test_user_message_and_stub_survive_and_the_session_continues(
        self, seed: int, db_path: str, pool: StorePool, spawn: Spawn
    ) -> None:
        child = await spawn("stream", db_path)
        session_id = await child.expect("SESSION")
        await child.expect("STREAMING")
        await asyncio.sleep(random.Random(seed).uniform(0.0, 0.3))
        returncode = await child.kill()
        assert returncode == -signal.SIGKILL, "the child finished before it was killed"

        assert integrity(db_path) == ("ok", [])
        session = await MnesisSession.load(
            session_id, db_path=db_path, pool=pool, llm=FakeLLM(), config=NO_AUTO_COMPACTION
        )
        messages = await session.messages()
        assert [m.role for m in messages] == ["user", "assistant"]
        user, stub = messages
        assert user.text == USER_TEXT
        assert stub.message.parent_id == user.id
        assert stub.message.finish_reason is None
        assert stub.parts == []
        positions = rows(
            db_path,
            "SELECT position, message_id FROM context_items WHERE session_id = ? ORDER BY position",
            session_id,
        )
        assert positions == [(1, user.id), (2, stub.id)]

        turn = await session.send("Are you still there?")
        assert turn.finish_reason == "stop"
        assert turn.text.startswith("[fake ")
        after = await session.messages()
        assert [m.role for m in after] == ["user", "assistant", "user", "assistant"]
        assert after[3].text == turn.text
        context = await session.context_for_next_turn()
        assert USER_TEXT in [m["content"] for m in context]
        await session.close()
        assert integrity(db_path) == ("ok", [])


class TestKilledWhileRecording:
    @pytest.mark.parametrize("seed", range(3))
    async def test_every_recorded_turn_is_whole_and_sequences_have_no_gaps(
        self, seed: int, db_path: str, pool: StorePool, spawn: Spawn
    ) -> None:
        child = await spawn("record-forever", db_path)
        session_id = await child.expect("SESSION")
        await child.expect("RECORDED")
        await asyncio.sleep(random.Random(seed).uniform(0.05, 0.4))
        assert await child.kill() == -signal.SIGKILL

        assert integrity(db_path) == ("ok", [])
        stored = rows(
            db_path,
            "SELECT seq, role, id, parent_id FROM messages WHERE session_id = ? ORDER BY seq",
            session_id,
        )
        assert len(stored) >= 2
        assert len(stored) % 2 == 0, "a turn was half-written"
        assert [r[0] for r in stored] == list(range(1, len(stored) + 1))
        assert [r[1] for r in stored] == ["user", "assistant"] * (len(stored) // 2)
        for user, assistant in zip(stored[::2], stored[1::2], strict=True):
            assert assistant[3] == user[2]
        positions = rows(
            db_path,
            "SELECT position, message_id FROM context_items WHERE session_id = ? ORDER BY position",
            session_id,
        )
        assert positions == [(i + 1, r[2]) for i, r in enumerate(stored)]
        orphans = rows(
            db_path,
            "SELECT COUNT(*) FROM message_parts p LEFT JOIN messages m ON m.id = p.message_id "
            "WHERE m.id IS NULL",
        )
        assert orphans == [(0,)]

        session = await MnesisSession.load(
            session_id, db_path=db_path, pool=pool, llm=FakeLLM(), config=NO_AUTO_COMPACTION
        )
        recorded = await session.record("after the crash", "still here")
        messages = await session.messages()
        assert len(messages) == len(stored) + 2
        assert messages[-1].id == recorded.assistant_message_id
        assert messages[-1].text == "still here"
        await session.close()
        assert integrity(db_path) == ("ok", [])
