"""PostgreSQL benchmarks: ``record()`` and ``context_for_next_turn()`` next to SQLite and
next to the floor, and full-text grep over a million messages.

The floor is raw ``psycopg`` doing the same work on the same server, on a database
created by mnesis (same schema, generated ``tsvector`` columns, GIN indexes, triggers):
one turn = the same two messages, three parts and two context items in one
transaction (``executemany`` for the parts); one context = the same SELECTs as the
SQLite floor. The server is :class:`benchmarks._pg.Cluster` (``fsync=off``,
``synchronous_commit=off``: the disk is not what is measured) unless
``MNESIS_BENCH_PG_DSN`` names one. The variants run interleaved, as in
``bench_session``, so noise hits them alike.

The 1M-message grep store is built with ``COPY`` straight into ``messages`` and
``message_parts`` (:func:`build_grep_store`: no context rows, no tool outputs, ~250
characters per message with the neighbour context the writer would give it), as a bulk
import would; ``record()`` would take hours for that many.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from benchmarks._floor import (
    FloorSession,
    floor_connect,
    floor_context,
    floor_turn,
    pg_floor_context,
    pg_floor_turn,
)
from benchmarks._pg import Cluster, with_database
from benchmarks.bench_session import (
    MODEL,
    SYSTEM_PROMPT,
    Report,
    SessionCache,
    Workload,
    build_history,
    fmt_ms,
    fmt_us,
    median,
    no_auto_config,
    p95,
    ratio,
)
from mnesis import FakeLLM, MnesisSession, StorePool
from mnesis.context.builder import ContextBudget
from mnesis.models.ids import new_id
from mnesis.store.shared.search_context import search_context
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = [
    "GREP_QUERIES",
    "bench_postgres",
    "build_grep_store",
    "grep_report",
    "pg_server",
    "time_grep",
]


@contextmanager
def pg_server() -> Iterator[str]:
    """``MNESIS_BENCH_PG_DSN``, or a throwaway cluster for the duration of the block."""
    given = os.environ.get("MNESIS_BENCH_PG_DSN")
    if given:
        yield given
        return
    cluster = Cluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _new_database(dsn: str) -> str:
    name = f"mnesis_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8'")
    return with_database(dsn, name)


# -- 1. record() ------------------------------------------------------------------------
async def _session(location: str, pool: StorePool) -> MnesisSession:
    return await MnesisSession.create(
        model=MODEL, config=no_auto_config(), db_path=location, pool=pool, llm=FakeLLM()
    )


async def _bench_record(dsn: str, workdir: str, quick: bool) -> Report:
    blocks, per_block, warmup = (4, 40, 20) if quick else (8, 80, 60)
    workload = Workload()
    pool = StorePool()
    pg_url, floor_url = _new_database(dsn), _new_database(dsn)
    sqlite_path = os.path.join(workdir, "pg-bench-record.db")
    sqlite_floor_path = os.path.join(workdir, "pg-bench-floor.db")
    samples: dict[str, list[float]] = {k: [] for k in ("pg", "pg_floor", "lite", "lite_floor")}
    try:
        pg = await _session(pg_url, pool)
        lite = await _session(sqlite_path, pool)
        other = await _session(floor_url, pool)
        pg_floor = FloorSession(psycopg.connect(floor_url), other.id)
        await other.close()
        other = await _session(sqlite_floor_path, pool)
        lite_floor = FloorSession(floor_connect(sqlite_floor_path), other.id)
        await other.close()
        turn = 0

        async def block(count: int, keep: bool) -> None:
            nonlocal turn
            for key, session in (("pg", pg), ("lite", lite)):
                for _ in range(count):
                    parts = workload.assistant_parts(turn, int(time.time() * 1000))
                    started = time.perf_counter()
                    await session.record(workload.user_text(turn), parts)
                    if keep:
                        samples[key].append(time.perf_counter() - started)
                    turn += 1
            for _ in range(count):
                started = time.perf_counter()
                pg_floor_turn(pg_floor, workload, turn)
                if keep:
                    samples["pg_floor"].append(time.perf_counter() - started)
                turn += 1
            for _ in range(count):
                started = time.perf_counter()
                floor_turn(lite_floor, workload, turn)
                if keep:
                    samples["lite_floor"].append(time.perf_counter() - started)
                turn += 1

        await block(warmup, keep=False)
        for _ in range(blocks):
            await block(per_block, keep=True)
        await pg.close()
        await lite.close()
        pg_floor.conn.close()
        lite_floor.conn.close()
    finally:
        await pool.close_all()

    report = Report(
        "P1. record() on PostgreSQL: one turn = user + assistant message with a ~2 KB tool output",
        ["variant", "turns", "median µs", "p95 µs", "turns/s", "vs PG floor", "vs own floor"],
    )
    labels = {
        "pg": ("mnesis record(), PostgreSQL", "pg_floor"),
        "pg_floor": ("floor: raw psycopg, same server", "pg_floor"),
        "lite": ("mnesis record(), SQLite", "lite_floor"),
        "lite_floor": ("floor: raw sqlite3", "lite_floor"),
    }
    pg_floor_median = median(samples["pg_floor"])
    for key, (label, own) in labels.items():
        values = samples[key]
        report.rows.append(
            [label, str(len(values)), fmt_us(median(values)), fmt_us(p95(values)),
             f"{len(values) / sum(values):,.0f}", ratio(median(values), pg_floor_median),
             ratio(median(values), median(samples[own]))]
        )  # fmt: skip
    report.notes.append(
        "Target: PostgreSQL record() within 2x of the raw psycopg floor (one transaction "
        "per turn: 2 messages, executemany of 3 parts, 2 context items; the tsvector "
        "columns and GIN indexes are maintained on both)."
    )
    return report


# -- 2. context_for_next_turn() -----------------------------------------------------------
@dataclass(slots=True)
class _Run:
    size: int
    backend: str
    session: MnesisSession
    floor: Any
    session_id: str
    budget: int
    ours: list[float] = field(default_factory=list)
    floors: list[float] = field(default_factory=list)


async def _pg_history(dsn: str, size: int) -> tuple[str, str, float]:
    url = _new_database(dsn)
    pool = StorePool()
    started = time.perf_counter()
    try:
        session = await _session(url, pool)
        await build_history(session, Workload(), size)
        session_id = session.id
        await session.close()
    finally:
        await pool.close_all()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return url, session_id, time.perf_counter() - started


async def _bench_context(dsn: str, cache: SessionCache, quick: bool) -> Report:
    sizes = (1_000, 5_000) if quick else (1_000, 10_000, 100_000)
    reps = 10 if quick else 25
    pool = StorePool()
    runs: list[_Run] = []
    builds: dict[int, float] = {}
    try:
        for size in sizes:
            url, pg_sid, seconds = await _pg_history(dsn, size)
            builds[size] = seconds
            path, lite_sid = await cache.get(size)
            for backend, location, sid in (("PostgreSQL", url, pg_sid), ("SQLite", path, lite_sid)):
                session = await MnesisSession.load(
                    sid, config=no_auto_config(), db_path=location, pool=pool, llm=FakeLLM()
                )
                estimator = TokenEstimator(session.model_info.encoding)
                budget = (
                    ContextBudget.compute(session.model_info, session.config).usable
                    - estimator.estimate(SYSTEM_PROMPT)
                    - MESSAGE_OVERHEAD_TOKENS
                )
                floor: Any = (
                    psycopg.connect(location) if backend == "PostgreSQL" else floor_connect(path)
                )
                await session.context_for_next_turn(SYSTEM_PROMPT)
                runs.append(_Run(size, backend, session, floor, sid, budget))
        for _ in range(reps):
            for run in runs:
                started = time.perf_counter()
                await run.session.context_for_next_turn(SYSTEM_PROMPT)
                run.ours.append(time.perf_counter() - started)
                started = time.perf_counter()
                if run.backend == "PostgreSQL":
                    pg_floor_context(run.floor, run.session_id, run.budget, SYSTEM_PROMPT)
                else:
                    floor_context(run.floor, run.session_id, run.budget, SYSTEM_PROMPT)
                run.floors.append(time.perf_counter() - started)
    finally:
        for run in runs:
            run.floor.close()
            await run.session.close()
        await pool.close_all()

    report = Report(
        "P2. context_for_next_turn() p50 by session length, PostgreSQL next to SQLite (ms)",
        ["backend", "messages", "p50", "p95", "floor p50", "p50 / floor", "p50 vs 1k"],
    )
    smallest = {r.backend: median(r.ours) for r in runs if r.size == sizes[0]}
    for run in sorted(runs, key=lambda r: (r.backend, r.size)):
        ours = median(run.ours)
        report.rows.append(
            [run.backend, f"{run.size:,}", fmt_ms(ours), fmt_ms(p95(run.ours)),
             fmt_ms(median(run.floors)), ratio(ours, median(run.floors)),
             ratio(ours, smallest[run.backend])]
        )  # fmt: skip
    report.notes.append(
        "Target: flat in history (PostgreSQL 100k within 1.5x of 1k). Steady state "
        "(the builder's rendering cache warm), as a session sees it turn after turn. "
        "PostgreSQL histories built through store.append_messages in batches of 1,000: "
        + ", ".join(f"{n:,} in {s:.0f}s" for n, s in builds.items())
        + "."
    )
    return report


# -- 3. grep over 1M messages -------------------------------------------------------------
GREP_QUERIES = (
    "which port did we move to after the tls migration",
    '"tls migration"',
    "port 8443",
    "session store latency",
    "compaction window budget",
)
"""A multi-word question, a phrase and two words of the planted fact (rare: one message
in 9,973), and three words of the 70-word filler vocabulary (each in about half the rows)."""


def build_grep_store(url: str, total: int, sessions: int = 100) -> list[str]:
    """Bulk-load ``total`` messages (one text part each) into the migrated, empty
    database ``url`` with ``COPY``, each part with the neighbour context the writer
    would give it; returns the session ids."""
    workload = Workload(tool_output_chars=0)
    session_ids = [new_id("sess") for _ in range(sessions)]
    now = int(time.time() * 1000)
    per = total // sessions
    with psycopg.connect(url) as conn:
        with conn.cursor().copy(
            "COPY sessions (id, model, created_at, updated_at) FROM STDIN"
        ) as copy:
            for sid in session_ids:
                copy.write_row((sid, MODEL, now, now))
        ids = [(new_id("msg"), new_id("part")) for _ in range(per * sessions)]
        with conn.cursor().copy(
            "COPY messages (id, session_id, seq, role, created_at, token_estimate) FROM STDIN"
        ) as msgs:
            for s, sid in enumerate(session_ids):
                for i in range(per):
                    msgs.write_row(
                        (ids[s * per + i][0], sid, i + 1, "user" if i % 2 == 0 else "assistant",
                         now + i, 60)
                    )  # fmt: skip
        with conn.cursor().copy(
            "COPY message_parts (id, message_id, session_id, ordinal, part_type, content, "
            "text_content, token_estimate, created_at, search_context) FROM STDIN"
        ) as parts:
            for s, sid in enumerate(session_ids):
                previous: list[tuple[str, str]] = []
                for i in range(per):
                    role = "user" if i % 2 == 0 else "assistant"
                    text = (
                        workload.user_text(s * per + i)
                        if i % 2 == 0
                        else workload.reply_texts[(s * per + i) % len(workload.reply_texts)]
                    )
                    if i % 9973 == 17:
                        text += " the deployment used port 8443 after the tls migration"
                    context = search_context(role, now + i, previous)
                    parts.write_row(
                        (ids[s * per + i][1], ids[s * per + i][0], sid, 0, "text",
                         json.dumps({"type": "text", "text": text}), text, 60, now + i, context)
                    )  # fmt: skip
                    previous = [(role, text), *previous[:1]]
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
    return session_ids


async def _migrated_database(dsn: str) -> str:
    url = _new_database(dsn)
    pool = StorePool()
    store = await pool.acquire(db_path=url)
    await store.close()
    await pool.close_all()
    return url


async def time_grep(
    url: str, session_id: str, rounds: int, queries: Sequence[str] = GREP_QUERIES
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Wall times of ``grep`` over every session (limit 20) per query, queries taking
    turns, and the number of matches of each."""
    samples: dict[str, list[float]] = {q: [] for q in queries}
    found: dict[str, int] = {}
    pool = StorePool()
    try:
        session = await MnesisSession.load(
            session_id, config=no_auto_config(), db_path=url, pool=pool, llm=FakeLLM()
        )
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                result = await session.retrieval.grep(q, all_sessions=True, limit=20)
                samples[q].append(time.perf_counter() - t)
                found[q] = len(result.matches)
        await session.close()
    finally:
        await pool.close_all()
    return samples, found


def grep_report(total: int, samples: dict[str, list[float]], found: dict[str, int]) -> Report:
    """The P3 table of one store size."""
    report = Report(
        f"P3. full-text grep over {total:,} messages on PostgreSQL (all sessions, limit 20)",
        ["query", "matches", "p50 ms", "p95 ms"],
    )
    for q, values in samples.items():
        report.rows.append([q, str(found[q]), fmt_ms(median(values)), fmt_ms(p95(values))])
    return report


async def _bench_grep(dsn: str, quick: bool) -> Report:
    total = 100_000 if quick else 1_000_000
    url = await _migrated_database(dsn)
    started = time.perf_counter()
    session_ids = build_grep_store(url, total)
    built = time.perf_counter() - started
    report = grep_report(total, *await time_grep(url, session_ids[0], 3 if quick else 7))
    report.notes.append(
        f"{total:,} messages in {len(session_ids)} sessions (~250 characters each, one "
        "text part with its neighbour context) bulk-loaded with COPY into "
        f"messages/message_parts in {built:.0f}s (tsvector columns generated and "
        "GIN-indexed by the server during the load), then VACUUM ANALYZE; searched "
        "through the public retrieval engine."
    )
    return report


async def bench_postgres(cache: SessionCache, workdir: str, *, quick: bool) -> list[Report]:
    """The PostgreSQL tables (starts a throwaway cluster unless ``MNESIS_BENCH_PG_DSN``)."""
    with pg_server() as dsn:
        return [
            await _bench_record(dsn, workdir, quick),
            await _bench_context(dsn, cache, quick),
            await _bench_grep(dsn, quick),
        ]
