"""Child process for the concurrency and crash tests (run with ``python -m``).

Modes (every line is flushed as soon as it is printed):

``replay DB SESSION FIXTURE START TURNS MODEL``
    Reopen the session with automatic compaction on, record turns
    ``START..START+TURNS`` of the fixture, print ``ack <user_id> <assistant_id>``
    after each ``record()`` returns, and compact explicitly every 8 turns
    between ``compact-start`` and ``compact-done`` lines. ``MODEL`` is
    ``extractive`` or ``fake``.

``compact DB SESSION``
    Reopen the session, print ``ready``, wait for a line on stdin (the
    parent's starting signal, so several children compact at once), run
    ``session.compact()`` and print its result as one JSON line.

``hang DB SESSION``
    Reopen the session and compact with a model that never answers; print
    ``model-called`` when the compaction reaches the model (it holds the
    session's compaction lease by then). The parent kills the process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator

from mnesis import MnesisSession, StorePool
from mnesis.llm import FakeLLM, LLMChunk, LLMRequest
from mnesis.testing import SESSIONS, generate
from tests.compaction import small_window_config


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _replay(db: str, session_id: str, fixture: str, start: int, turns: int, model: str):
    pool = StorePool()
    config = small_window_config(compaction_model="extractive" if model == "extractive" else None)
    session = await MnesisSession.load(
        session_id, config=config, db_path=db, pool=pool, llm=FakeLLM()
    )
    conversation = generate(SESSIONS[fixture])
    for offset, turn in enumerate(conversation.turns[start : start + turns], start=1):
        recorded = await session.record(list(turn.user), list(turn.assistant))
        say(f"ack {recorded.user_message_id} {recorded.assistant_message_id}")
        if offset % 8 == 0:
            say("compact-start")
            result = await session.compact()
            say(f"compact-done {result.level_used}")
    await session.close()
    await pool.close_all()
    say("done")


async def _compact(db: str, session_id: str) -> None:
    pool = StorePool()
    session = await MnesisSession.load(
        session_id, config=small_window_config(auto=False), db_path=db, pool=pool, llm=FakeLLM()
    )
    say("ready")
    await asyncio.to_thread(sys.stdin.readline)
    result = await session.compact()
    say(json.dumps(result.model_dump()))
    await session.close()
    await pool.close_all()


class _NeverAnswers:
    """A model that announces each call, then never answers."""

    async def stream(self, request: LLMRequest) -> AsyncIterator[LLMChunk]:
        say("model-called")
        await asyncio.Event().wait()
        yield LLMChunk()  # pragma: no cover - never reached


async def _hang(db: str, session_id: str) -> None:
    pool = StorePool()
    session = await MnesisSession.load(
        session_id,
        config=small_window_config(auto=False),
        db_path=db,
        pool=pool,
        llm=_NeverAnswers(),
    )
    await session.compact()
    say("compact-done")


def main(argv: list[str]) -> int:
    mode, db, session_id, *rest = argv
    if mode == "replay":
        fixture, start, turns, model = rest
        asyncio.run(_replay(db, session_id, fixture, int(start), int(turns), model))
    elif mode == "compact":
        asyncio.run(_compact(db, session_id))
    elif mode == "hang":
        asyncio.run(_hang(db, session_id))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
