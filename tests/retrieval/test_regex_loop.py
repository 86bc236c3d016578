"""Regex grep never holds the event loop, and returns within its bound.

Issue 34: the matching thread held the GIL inside the ``regex`` engine, so during a
``(a+)+$`` search a 10 ms asyncio ticker got 18 of 79 ticks (gaps up to 0.51 s) and
a grep bounded at 0.5 s took 0.79 s.

The ticker measures the loop only while the grep runs. On Linux each gap is
reduced by the time the loop's thread spent waiting for a CPU in the kernel's run
queue (``/proc/self/task/TID/schedstat``): other processes on a loaded CI machine
delay the loop that way, while a thread holding the GIL makes it sleep on a lock,
which is not run-queue time. So the check stays at 50 ms without depending on how
busy the machine is, and still catches any GIL hold longer than that.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.config import CompactionConfig, RetrievalConfig

BOUND = 1.0
TICK = 0.01
MAX_GAP = 0.05


def _queued_seconds() -> float:
    """Time the calling thread has spent runnable but waiting for a CPU (0 if unknown)."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


async def test_a_catastrophic_pattern_never_holds_the_loop(tmp_path: Path) -> None:
    pool = StorePool()
    config = MnesisConfig(
        retrieval=RetrievalConfig(regex_timeout_seconds=BOUND),
        compaction=CompactionConfig(auto=False),
    )
    session = await MnesisSession.create(
        model="fake/m", db_path=str(tmp_path / "r.db"), pool=pool, config=config
    )
    # 3,000 a's then a character `$` cannot match: every text backtracks exponentially.
    for _ in range(75):
        await session.record("a" * 3000 + "!", "a" * 3000 + "!")

    gaps: list[float] = []
    grepping = True

    async def ticker() -> None:
        last, queued = time.monotonic(), _queued_seconds()
        while grepping:
            await asyncio.sleep(TICK)
            now, now_queued = time.monotonic(), _queued_seconds()
            gaps.append((now - last) - (now_queued - queued))
            last, queued = now, now_queued

    started, queued_before = time.monotonic(), _queued_seconds()
    ticking = asyncio.create_task(ticker())
    result = await session.grep("(a+)+$", mode="regex", scope="messages")
    elapsed = time.monotonic() - started - (_queued_seconds() - queued_before)
    grepping = False
    await ticking
    await session.close()
    await pool.close_all()

    assert result.timed_out, "the pattern must keep the scan busy up to its bound"
    assert result.next_cursor is not None
    assert len(gaps) >= 10
    assert max(gaps) < MAX_GAP, f"the loop was held {max(gaps):.3f} s"
    assert elapsed <= BOUND * 1.1, f"a grep bounded at {BOUND} s took {elapsed:.2f} s"
