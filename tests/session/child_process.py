"""A separate process that writes to a mnesis database, for the crash and
multi-process tests. Not a test module: the tests run it with ``sys.executable``.

Modes (first argument), each followed by the database path:

``stream DB``
    Create a session, print ``SESSION <id>``, send a message to a slow fake model
    and print ``STREAMING`` after the first delta. The reply takes many seconds,
    so the parent kills the process mid-stream.
``record-forever DB``
    Create a session, print ``SESSION <id>``, then record turns until killed,
    printing ``RECORDED`` after the first one.
``record DB N``
    Print ``READY``, wait for a line on stdin, then create a session, record ``N``
    turns and print ``DONE <id>``.
"""

from __future__ import annotations

import asyncio
import sys

from mnesis import CompactionConfig, MnesisConfig, MnesisSession, StorePool, TextDelta
from mnesis.llm import FakeLLM

USER_TEXT = "Remember the launch code: 7-alpha-9."


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _config() -> MnesisConfig:
    return MnesisConfig(compaction=CompactionConfig(auto=False))


async def _stream(db_path: str) -> None:
    llm = FakeLLM(reply=lambda request: "slow words " * 400, chunk_chars=8, delay_seconds=0.02)
    session = await MnesisSession.create(
        model="fake/child", db_path=db_path, pool=StorePool(), llm=llm, config=_config()
    )
    _say(f"SESSION {session.id}")
    announced = False
    async for item in session.stream(USER_TEXT):
        if isinstance(item, TextDelta) and not announced:
            _say("STREAMING")
            announced = True
    _say("FINISHED")


async def _record_forever(db_path: str) -> None:
    session = await MnesisSession.create(
        model="fake/child", db_path=db_path, pool=StorePool(), llm=FakeLLM(), config=_config()
    )
    _say(f"SESSION {session.id}")
    turn = 0
    while True:
        await session.record(f"user turn {turn}", f"assistant turn {turn}")
        if turn == 0:
            _say("RECORDED")
        turn += 1


async def _record(db_path: str, turns: int) -> None:
    _say("READY")
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/child", db_path=db_path, pool=pool, llm=FakeLLM(), config=_config()
    )
    for turn in range(turns):
        await session.record(f"user turn {turn}", f"assistant turn {turn}")
    await session.close()
    await pool.close_all()
    _say(f"DONE {session.id}")


def main(argv: list[str]) -> int:
    mode, db_path = argv[0], argv[1]
    if mode == "stream":
        asyncio.run(_stream(db_path))
    elif mode == "record-forever":
        asyncio.run(_record_forever(db_path))
    elif mode == "record":
        asyncio.run(_record(db_path, int(argv[2])))
    else:
        sys.stderr.write(f"unknown mode {mode!r}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
