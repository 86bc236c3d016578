"""A worker process for the tests, with a summariser that can be slowed down.

``python -m tests.workers.worker_main URL DIR NAME [SLOW_SECONDS]``: every summarise call
first touches ``DIR/NAME.started`` (so a test knows a job is mid-run), then waits
``SLOW_SECONDS`` (or until ``DIR/go`` exists) before summarising extractively.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from mnesis.compaction.summariser import Summariser
from mnesis.workers import WorkerOptions, WorkerSettings, run_worker
from tests.workers import Paused


def main() -> None:
    url, directory, name = sys.argv[1:4]
    slow = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    marker = Path(directory) / f"{name}.started"
    go = Path(directory) / "go"
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")

    async def pause() -> None:
        marker.touch()
        for _ in range(round(slow / 0.05)):
            if go.exists():
                break
            await asyncio.sleep(0.05)

    def ladder() -> list[Summariser]:
        return [Paused(pause)]

    settings = WorkerSettings(
        url=url,
        name=name,
        heartbeat_seconds=0.5,
        stalled_after_seconds=3.0,
        stalled_check_seconds=1.0,
        poll_seconds=0.5,
        backoff=1.0,
    )
    asyncio.run(run_worker(settings, WorkerOptions(summarisers=ladder)))


if __name__ == "__main__":
    main()
