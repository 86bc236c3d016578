"""Running the demo session: the scenario's turns through the public session API.

Determinism: the conversation comes from the seed, and the demo waits for each
background compaction before the next turn, so compactions happen at the same turns on
every run, up to one caveat: summaries quote IDs, which are random, so their token
estimates differ by a few tokens between runs and can, now and then, move a compaction
by one turn.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import replace

from mnesis.cli.demo._config import DEMO_MODEL, SYSTEM_PROMPT, demo_config
from mnesis.cli.demo._live import LiveStats
from mnesis.cli.demo._report import DemoReport, collect_report
from mnesis.events.bus import MnesisEvent
from mnesis.session import MnesisSession
from mnesis.store.pool import StorePool
from mnesis.testing.conversations import DEMO, iter_turns, planted_facts

__all__ = ["run_demo", "run_demo_sync"]


async def run_demo(
    db_path: str,
    *,
    turns: int,
    seed: int,
    on_turn: Callable[[LiveStats], None] | None = None,
) -> DemoReport:
    """Run the demo session on ``db_path`` and return what the final tables show."""
    started = time.perf_counter()
    live = LiveStats()
    pool = StorePool()
    try:
        session = await MnesisSession.create(
            model=DEMO_MODEL, config=demo_config(db_path), pool=pool, system_prompt=SYSTEM_PROMPT
        )
        session.subscribe(MnesisEvent.COMPACTION_COMPLETED, live.on_compaction)
        session.subscribe(MnesisEvent.PRUNE_COMPLETED, live.on_prune)
        session.subscribe(MnesisEvent.COMPACTION_FAILED, live.on_failure)
        try:
            spec = replace(DEMO, turns=turns, seed=seed)
            for index, turn in enumerate(iter_turns(spec)):
                live.turn = index + 1
                if turn.is_chat:
                    await session.send(turn.user_text)
                else:
                    await session.record(turn.user_text, list(turn.assistant))
                # Compaction runs in the background after a turn; waiting here makes it
                # land at the same turn on every run, so a seed reproduces the session.
                await session.compaction_engine.wait_for_pending()
                live.context_tokens = await session.store.context_token_total(session.id)
                if on_turn is not None:
                    on_turn(live)
            report = await collect_report(
                session, live, planted_facts(spec), turns=turns, seed=seed
            )
        finally:
            await session.close()
    finally:
        await pool.close_all()
    report.elapsed_s = time.perf_counter() - started
    return report


def run_demo_sync(
    db_path: str, turns: int, seed: int, on_turn: Callable[[LiveStats], None] | None = None
) -> DemoReport:
    """:func:`run_demo` on its own event loop, with the database's size on disk filled in."""
    report = asyncio.run(run_demo(db_path, turns=turns, seed=seed, on_turn=on_turn))
    report.db_bytes = sum(
        os.path.getsize(p) for p in (db_path, db_path + "-wal") if os.path.exists(p)
    )
    return report
