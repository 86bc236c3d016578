"""Running the demo session: the scenario's turns through the public session API.

Determinism: the same seed gives the same session, byte for byte. The conversation
comes from the seed; the IDs too (:func:`mnesis.models.ids.seeded_ids`: random IDs are
quoted in the context, and their token estimates would otherwise move a compaction by a
turn now and then); the demo waits for each background compaction before the next turn,
so compactions land at the same turns whatever the machine's speed; and nothing the
engine decides depends on the wall clock or on the iteration order of a set.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace

from mnesis.cli.demo._config import DEMO_MODEL, SYSTEM_PROMPT, demo_config
from mnesis.cli.demo._live import LiveStats
from mnesis.cli.demo._report import DemoReport, collect_report
from mnesis.events.bus import MnesisEvent
from mnesis.models.ids import seeded_ids
from mnesis.session import MnesisSession
from mnesis.store.pool import StorePool
from mnesis.store.sqlite.fts_merge import merge_all
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
    # A second demo run on the same file gets IDs of its own, which differ from the
    # first run's in digits alone: same token counts, so the same session.
    with seeded_ids(seed, era=await _sessions_in(db_path)):
        report = await _run_session(db_path, turns=turns, seed=seed, on_turn=on_turn)
    db_bytes = await _used_bytes(db_path)
    return replace(report, elapsed_s=time.perf_counter() - started, db_bytes=db_bytes)


async def _sessions_in(db_path: str) -> int:
    pool = StorePool()
    try:
        store = await pool.acquire(demo_config(db_path).store)
        return len(await store.list_sessions(limit=1_000_000))
    finally:
        await pool.close_all()


async def _used_bytes(db_path: str) -> int:
    """The bytes the session's data takes in a compacted copy of the database (its
    full-text index merged into one segment, then ``VACUUM``): the file itself holds
    as many index segments and free pages as the background merge left, which depends
    on timing, so its size would differ between two runs of one seed."""
    pool = StorePool()
    with tempfile.TemporaryDirectory(prefix="mnesis-demo-") as scratch:
        copy = os.path.join(scratch, "copy.db")
        try:
            await (await pool.acquire(demo_config(db_path).store)).backup_to(copy)
        finally:
            await pool.close_all()
        return await asyncio.to_thread(_compacted_size, copy)


def _compacted_size(path: str) -> int:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        merge_all(conn)
        conn.execute("VACUUM")
    finally:
        conn.close()
    return os.path.getsize(path)


async def _run_session(
    db_path: str, *, turns: int, seed: int, on_turn: Callable[[LiveStats], None] | None
) -> DemoReport:
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
    return report


def run_demo_sync(
    db_path: str, turns: int, seed: int, on_turn: Callable[[LiveStats], None] | None = None
) -> DemoReport:
    """:func:`run_demo` on its own event loop."""
    return asyncio.run(run_demo(db_path, turns=turns, seed=seed, on_turn=on_turn))
