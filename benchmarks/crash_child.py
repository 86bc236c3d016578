"""The child process of the crash campaign (run with ``python -m``; not a test module).

``python -m benchmarks.crash_child DB SESSION_ID SIDE_LOG SEED``

Reopens the session with a 32k window and automatic compaction on, prints
``ready`` and then runs a random mix (drawn from ``SEED``) of ``record``,
``send``, ``stream`` and ``compact`` against a fake model with small delays,
until the parent kills it with SIGKILL (or, after ``MAX_OPS`` operations, exits 0
printing ``done``).

The side log is the campaign's ground truth. Before an operation the child
appends ``begin <op>``; after the call returned it appends
``ack <op> <ids...>`` (the message IDs of the turn, or the summary ID of a
compaction that committed) and calls ``flush`` and ``os.fsync``: every ``ack``
line names rows the store acknowledged. Background compactions log
``bg-start`` / ``bg-ack <summary_id>`` from the session's events.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from typing import IO, Any

from benchmarks.crash_trials import FIXTURE, START_TURN, campaign_config
from mnesis import MnesisEvent, MnesisSession, StorePool, TurnComplete
from mnesis.testing import SESSIONS, FakeLLM, generate

MAX_OPS = 400
OPS = ("record", "send", "stream", "compact")
WEIGHTS = (50, 20, 20, 10)


class SideLog:
    """Append-only lines; ``ack`` lines are flushed and fsynced before returning."""

    def __init__(self, path: str) -> None:
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def note(self, line: str) -> None:
        self._file.write(line + "\n")
        self._file.flush()

    def ack(self, line: str) -> None:
        self.note(line)
        os.fsync(self._file.fileno())


async def campaign(db_path: str, session_id: str, side_log: str, seed: int) -> None:
    rng = random.Random(seed)
    log = SideLog(side_log)
    llm = FakeLLM(chunk_chars=rng.choice((16, 48)), delay_seconds=rng.choice((0.001, 0.003)))
    extractive = seed % 2 == 0
    config = campaign_config(compaction_model="extractive" if extractive else None)
    pool = StorePool()
    session = await MnesisSession.load(
        session_id, config=config, db_path=db_path, pool=pool, llm=llm
    )

    def background(event: MnesisEvent, payload: dict[str, Any]) -> None:
        if event == MnesisEvent.COMPACTION_TRIGGERED:
            log.note(f"bg-start {payload.get('reason')}")
        elif event == MnesisEvent.COMPACTION_COMPLETED:
            summary_id = payload["result"].get("summary_id")
            if summary_id:
                log.ack(f"bg-ack {summary_id}")

    session.subscribe(MnesisEvent.COMPACTION_TRIGGERED, background)
    session.subscribe(MnesisEvent.COMPACTION_COMPLETED, background)
    turns = generate(SESSIONS[FIXTURE]).turns
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for index in range(MAX_OPS):
        op = rng.choices(OPS, WEIGHTS)[0]
        turn = turns[(START_TURN + index) % len(turns)]
        log.note(f"begin {op}")
        if op == "record":
            recorded = await session.record(list(turn.user), list(turn.assistant))
            log.ack(f"ack record {recorded.user_message_id} {recorded.assistant_message_id}")
        elif op == "send":
            result = await session.send(list(turn.user))
            log.ack(f"ack send {result.user_message_id} {result.message_id}")
        elif op == "stream":
            async for item in session.stream(list(turn.user)):
                if isinstance(item, TurnComplete):
                    done = item.result
                    log.ack(f"ack stream {done.user_message_id} {done.message_id}")
        else:
            compacted = await session.compact()
            log.ack(f"ack compact {compacted.summary_id or '-'}")
    await session.close()
    await pool.close_all()
    sys.stdout.write("done\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    db_path, session_id, side_log, seed = argv
    asyncio.run(campaign(db_path, session_id, side_log, int(seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
