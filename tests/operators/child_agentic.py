"""A separate process running an AgenticMap, for the kill-and-resume test. Not a
test module: the test runs it with ``sys.executable`` and kills it with SIGKILL.

Usage: ``child_agentic.py DB RUN_ID PARENT_SESSION_ID N``

Maps a slow fake model over the inputs of :func:`inputs` (``N`` of them, four at
a time). Prints ``CALL`` when a model call starts (the item's row is then already
``running``) and ``COMPLETED <index>`` for every finished item.
"""

from __future__ import annotations

import asyncio
import sys

from mnesis import CompactionConfig, MnesisConfig, OperatorConfig, StorePool
from mnesis.llm import FakeLLM, LLMRequest
from mnesis.operators import AgenticMap

TEMPLATE = "Work on {{ item }} and report."
CONCURRENCY = 4


def inputs(count: int) -> list[str]:
    """Input ``i`` is ``[item 07]``: no input's text contains another's."""
    return [f"[item {i:02d}]" for i in range(count)]


def session_config() -> MnesisConfig:
    return MnesisConfig(compaction=CompactionConfig(auto=False))


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _slow_reply(request: LLMRequest) -> str:
    _say("CALL")
    return "slow answer " * 10


async def _run(db_path: str, run_id: str, parent_id: str, count: int) -> None:
    llm = FakeLLM(reply=_slow_reply, chunk_chars=12, delay_seconds=0.05)
    operator = AgenticMap(
        OperatorConfig(agentic_map_concurrency=CONCURRENCY),
        model="fake/child",
        db_path=db_path,
        pool=StorePool(),
        llm=llm,
        session_config=session_config(),
    )
    async for result in operator.run(
        inputs(count), TEMPLATE, run_id=run_id, parent_session_id=parent_id
    ):
        _say(f"COMPLETED {result.index}")
    _say("FINISHED")


def main(argv: list[str]) -> int:
    db_path, run_id, parent_id, count = argv[0], argv[1], argv[2], int(argv[3])
    asyncio.run(_run(db_path, run_id, parent_id, count))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
