"""Session benchmarks: ``record()`` throughput and ``context_for_next_turn()`` latency.

Every number is compared with a *floor*: plain ``sqlite3`` doing the same writes
(or reads) on a database created by mnesis, so the schema, its indexes and its
triggers (full-text index included) are the same. The ratio ``mnesis / floor``
is the price of the library (validation, the async worker thread, rendering).

This module also holds the helpers the other benchmark modules share: the
deterministic workload, the bulk builder of long sessions, percentiles and the
:class:`Report` the runner prints.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import sqlite3
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from benchmarks._floor import FloorSession, floor_connect, floor_context, floor_turn
from mnesis import (
    CompactionConfig,
    FakeLLM,
    MnesisConfig,
    MnesisSession,
    StorePool,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.context.builder import ContextBudget, ContextBuilder
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart
from mnesis.store.base import NewMessage
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = [
    "MODEL",
    "SYSTEM_PROMPT",
    "Report",
    "SessionCache",
    "Workload",
    "bench_context",
    "bench_record",
    "build_history",
    "copy_file",
    "fmt_ms",
    "fmt_us",
    "median",
    "no_auto_config",
    "p95",
    "ratio",
]

MODEL = "fake/bench"
"""200k-token window, 8k output tokens (see ``mnesis.models.model_info``)."""
SYSTEM_PROMPT = "You are a helpful assistant."


# -- reporting ----------------------------------------------------------------
@dataclass(slots=True)
class Report:
    """One printed table: a title, column names, formatted rows and footnotes."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def median(values: Sequence[float]) -> float:
    """The median (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def p95(values: Sequence[float]) -> float:
    """The 95th percentile, nearest-rank (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def fmt_us(seconds: float) -> str:
    """Seconds as whole microseconds."""
    return f"{seconds * 1e6:,.0f}"


def fmt_ms(seconds: float) -> str:
    """Seconds as milliseconds with a precision that suits the size."""
    ms = seconds * 1e3
    return f"{ms:,.2f}" if ms < 10 else f"{ms:,.1f}" if ms < 100 else f"{ms:,.0f}"


def ratio(ours: float, floor: float) -> str:
    """``ours / floor`` as ``2.3x``."""
    return f"{ours / floor:.2f}x" if floor > 0 else "n/a"


# -- workload -----------------------------------------------------------------
_WORDS = (
    "the of and to in is for that with on it as was by be this are from at or an have not "
    "file function return value error test module import class data path read write config "
    "session store token context message summary compaction window budget index query row "
    "user assistant model tool output input result cache latency thread async await schema"
).split()
_IDENTS = ("items", "result", "config", "path", "count", "index", "node", "buffer", "state")


def _prose(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        if rng.random() < 0.08:
            word += rng.choice(",.;:")
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def _code(rng: random.Random, chars: int) -> str:
    lines: list[str] = []
    size = 0
    while size < chars:
        name = rng.choice(_IDENTS)
        kind = rng.randrange(4)
        if kind == 0:
            line = f"def {name}_{rng.randrange(1000)}(self, {rng.choice(_IDENTS)}: int) -> str:"
        elif kind == 1:
            line = f"    {name} = {rng.choice(_IDENTS)}[{rng.randrange(64)}] + {rng.random():.3f}"
        elif kind == 2:
            line = f"    # {_prose(rng, 50)}"
        else:
            line = f'    return {{"{name}": {rng.randrange(10**6)}, "ok": True}}'
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:chars]


class Workload:
    """Deterministic turns: a ~200-char user message, then an assistant message with
    ~300 chars of text and a ``read_file`` tool call whose output is ~2 KB of code.

    Texts come from fixed pools (seeded), so every run writes the same bytes.
    """

    def __init__(self, seed: int = 7, tool_output_chars: int = 2000) -> None:
        rng = random.Random(seed)
        self.user_texts = [_prose(rng, 200) for _ in range(64)]
        self.reply_texts = [_prose(rng, 300) for _ in range(64)]
        self.outputs = (
            [_code(rng, tool_output_chars) for _ in range(32)] if tool_output_chars else []
        )

    def user_text(self, turn: int) -> str:
        """The user message of ``turn``."""
        return self.user_texts[turn % len(self.user_texts)]

    def tool_call(self, turn: int) -> dict[str, Any] | None:
        """The plain fields of the tool call of ``turn`` (None without tool outputs)."""
        if not self.outputs:
            return None
        return {
            "tool_name": "read_file",
            "tool_call_id": f"call_{turn:08d}",
            "input": {"path": f"src/pkg/module_{turn % 997}.py"},
            "output": self.outputs[turn % len(self.outputs)],
        }

    def assistant_parts(self, turn: int, now_ms: int = 0) -> list[MessagePart]:
        """Fresh parts of the assistant message of ``turn``."""
        parts: list[MessagePart] = [TextPart(text=self.reply_texts[turn % len(self.reply_texts)])]
        call = self.tool_call(turn)
        if call is not None:
            parts.append(
                ToolPart(
                    **call,
                    status=ToolStatus(state="completed", started_at=now_ms, completed_at=now_ms),
                )
            )
        return parts


async def build_history(
    session: MnesisSession,
    workload: Workload,
    n_messages: int,
    *,
    out_of_context: int = 0,
    batch_size: int = 1000,
    first_turn: int = 0,
) -> None:
    """Append ``n_messages`` (user/assistant pairs) through ``store.append_messages``.

    The first ``out_of_context`` messages are stored without a context row: they
    stand for history that earlier compactions already replaced.
    """
    estimator = TokenEstimator(session.model_info.encoding)
    store = session.store
    batch: list[NewMessage] = []
    now = int(time.time() * 1000)
    for index in range(n_messages):
        turn = first_turn + index // 2
        if index % 2 == 0:
            message = Message(id=new_id("msg"), session_id=session.id, role="user", created_at=now)
            parts: list[MessagePart] = [TextPart(text=workload.user_text(turn))]
        else:
            message = Message(
                id=new_id("msg"),
                session_id=session.id,
                role="assistant",
                created_at=now,
                model_id="bench",
                provider_id="fake",
                finish_reason="stop",
            )
            parts = workload.assistant_parts(turn, now)
        tokens = [estimator.estimate_part(p) for p in parts]
        message.token_estimate = MESSAGE_OVERHEAD_TOKENS + sum(tokens)
        batch.append(NewMessage(message, parts, tokens, in_context=index >= out_of_context))
        if len(batch) >= batch_size:
            await store.append_messages(batch)
            batch = []
            now += 1
    if batch:
        await store.append_messages(batch)


class SessionCache:
    """Long sessions built once per run and shared by the benchmarks.

    ``path_for(n)`` returns a database file holding one session of ``n`` messages,
    all in context, compaction never having run. Callers that modify the session
    take a copy (:meth:`copy_of`).
    """

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self._built: dict[int, tuple[str, str, float]] = {}

    async def get(self, n_messages: int) -> tuple[str, str]:
        """``(db_path, session_id)`` of the ``n_messages`` session (built on first use)."""
        if n_messages not in self._built:
            path = os.path.join(self.workdir, f"history-{n_messages}.db")
            pool = StorePool()
            started = time.perf_counter()
            try:
                session = await MnesisSession.create(
                    model=MODEL, config=no_auto_config(), db_path=path, pool=pool, llm=FakeLLM()
                )
                await build_history(session, Workload(), n_messages)
                session_id = session.id
                await session.close()
            finally:
                await pool.close_all()
            self._built[n_messages] = (path, session_id, time.perf_counter() - started)
        path, session_id, _ = self._built[n_messages]
        return path, session_id

    def build_seconds(self, n_messages: int) -> float:
        """How long building the ``n_messages`` session took."""
        return self._built[n_messages][2]

    async def copy_of(self, n_messages: int, name: str) -> tuple[str, str]:
        """A private copy of the ``n_messages`` session (for benchmarks that write)."""
        path, session_id = await self.get(n_messages)
        target = os.path.join(self.workdir, f"{name}.db")
        await asyncio.to_thread(copy_file, path, target)
        return target, session_id


def copy_file(source: str, target: str) -> None:
    """Copy a closed database file."""
    with open(source, "rb") as src, open(target, "wb") as dst:
        while chunk := src.read(1 << 22):
            dst.write(chunk)


def no_auto_config() -> MnesisConfig:
    """Default config with automatic compaction off."""
    return MnesisConfig(compaction=CompactionConfig(auto=False))


# -- 1. record() throughput -------------------------------------------------------
async def _new_session(path: str, config: MnesisConfig, pool: StorePool) -> MnesisSession:
    return await MnesisSession.create(
        model=MODEL, config=config, db_path=path, pool=pool, llm=FakeLLM()
    )


async def bench_record(workdir: str, *, quick: bool) -> Report:
    """Per-turn cost of ``record()`` vs the same inserts through raw ``sqlite3``.

    The variants run in interleaved blocks so that noise from the shared machine
    hits all of them alike.
    """
    blocks, per_block, warmup = (4, 50, 30) if quick else (10, 100, 100)
    workload = Workload()
    pool = StorePool()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-floor")
    loop = asyncio.get_running_loop()
    try:
        session = await _new_session(os.path.join(workdir, "record.db"), no_auto_config(), pool)
        floors: list[FloorSession] = []
        for name in ("floor-main.db", "floor-thread.db"):
            path = os.path.join(workdir, name)
            other = await _new_session(path, no_auto_config(), pool)
            floors.append(FloorSession(floor_connect(path), other.id))
            await other.close()
        floor_main, floor_thread = floors
        samples: dict[str, list[float]] = {"mnesis": [], "main": [], "thread": []}
        turn = 0

        async def one_round(count: int, keep: bool) -> None:
            nonlocal turn
            for _ in range(count):
                now = int(time.time() * 1000)
                parts = workload.assistant_parts(turn, now)
                user_text = workload.user_text(turn)
                started = time.perf_counter()
                await session.record(user_text, parts)
                if keep:
                    samples["mnesis"].append(time.perf_counter() - started)
                turn += 1
            for _ in range(count):
                started = time.perf_counter()
                floor_turn(floor_main, workload, turn)
                if keep:
                    samples["main"].append(time.perf_counter() - started)
                turn += 1
            for _ in range(count):
                started = time.perf_counter()
                await loop.run_in_executor(executor, floor_turn, floor_thread, workload, turn)
                if keep:
                    samples["thread"].append(time.perf_counter() - started)
                turn += 1

        await one_round(warmup, keep=False)
        for _ in range(blocks):
            await one_round(per_block, keep=True)
        await session.close()
        for fs in floors:
            fs.conn.close()
    finally:
        executor.shutdown(wait=True)
        await pool.close_all()

    floor = median(samples["main"])
    report = Report(
        "1. record(): one turn = user message + assistant message with a ~2 KB tool output",
        ["variant", "turns", "median µs", "p95 µs", "turns/s", "median / floor"],
    )
    labels = {
        "mnesis": "mnesis record()",
        "main": "floor: raw sqlite3",
        "thread": "floor via a worker thread",
    }
    for key in ("mnesis", "main", "thread"):
        values = samples[key]
        report.rows.append(
            [
                labels[key],
                str(len(values)),
                fmt_us(median(values)),
                fmt_us(p95(values)),
                f"{len(values) / sum(values):,.0f}",
                ratio(median(values), floor),
            ]
        )
    report.notes.append(
        "Goal: mnesis within 3x of the floor. Floor = 2 messages + 3 parts (FTS triggers "
        "fire) + 2 context_items in one BEGIN IMMEDIATE transaction, on a database "
        "created by mnesis; JSON encoding of the parts included. turns/s = turns / total time."
    )
    return report


# -- 2. context_for_next_turn() latency ---------------------------------------------
@dataclass(slots=True)
class _ContextRun:
    """One session length under measurement (all lengths are measured in turn)."""

    size: int
    path: str
    session_id: str
    session: MnesisSession
    conn: sqlite3.Connection
    budget: int
    first_len: int
    floor_len: int
    load: list[float] = field(default_factory=list)
    cold: list[float] = field(default_factory=list)
    steady: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)


async def _load(path: str, session_id: str, pool: StorePool) -> tuple[MnesisSession, float]:
    started = time.perf_counter()
    session = await MnesisSession.load(
        session_id, config=no_auto_config(), db_path=path, pool=pool, llm=FakeLLM()
    )
    return session, time.perf_counter() - started


async def _measure_once(run: _ContextRun, estimator: TokenEstimator) -> None:
    session = run.session
    builder = ContextBuilder(session.store, token_estimator=estimator)
    started = time.perf_counter()
    built = await builder.build(run.session_id, session.model_info, SYSTEM_PROMPT, session.config)
    built.to_dicts()
    run.cold.append(time.perf_counter() - started)
    for _ in range(3):
        started = time.perf_counter()
        await session.context_for_next_turn(SYSTEM_PROMPT)
        run.steady.append(time.perf_counter() - started)
    started = time.perf_counter()
    floor_context(run.conn, run.session_id, run.budget, SYSTEM_PROMPT)
    run.floor.append(time.perf_counter() - started)


async def bench_context(cache: SessionCache, *, quick: bool) -> Report:
    """Latency of assembling the next context at growing session lengths.

    All lengths stay open and are measured round-robin, so a noisy moment on the
    shared machine does not land on one length only.
    """
    sizes = (1_000, 5_000) if quick else (1_000, 10_000, 100_000)
    reps = 15 if quick else 40
    report = Report(
        "2. context_for_next_turn() latency by session length (ms; model fake/bench, 200k window)",
        [
            "messages",
            "in context",
            "load() p50",
            "cold p50",
            "cold p95",
            "steady p50",
            "steady p95",
            "floor p50",
            "floor p95",
            "cold / floor",
            "steady / floor",
            "cold vs smallest",
            "steady vs smallest",
        ],
    )
    pool = StorePool()
    runs: list[_ContextRun] = []
    estimator = TokenEstimator()
    try:
        for size in sizes:
            path, session_id = await cache.get(size)
            loads = []
            for _ in range(3):
                session, seconds = await _load(path, session_id, pool)
                loads.append(seconds)
                await session.close()
            session, seconds = await _load(path, session_id, pool)
            loads.append(seconds)
            estimator = TokenEstimator(session.model_info.encoding)
            # Warm SQLite's page cache once: "cold" below means the builder's
            # rendering cache is empty, not that the disk is cold.
            first = await session.context_for_next_turn(SYSTEM_PROMPT)
            budget = (
                ContextBudget.compute(session.model_info, session.config).usable
                - estimator.estimate(SYSTEM_PROMPT)
                - MESSAGE_OVERHEAD_TOKENS
            )
            conn = floor_connect(path)
            floor_out = floor_context(conn, session_id, budget, SYSTEM_PROMPT)
            runs.append(
                _ContextRun(
                    size, path, session_id, session, conn, budget, len(first), len(floor_out)
                )
            )
            runs[-1].load.extend(loads)
        for _ in range(reps):
            for run in runs:
                await _measure_once(run, estimator)
    finally:
        for run in runs:
            run.conn.close()
            await run.session.close()
        await pool.close_all()

    base_cold = median(runs[0].cold)
    base_steady = median(runs[0].steady)
    for run in runs:
        if run.floor_len != run.first_len:
            report.notes.append(
                f"{run.size:,} messages: floor assembled {run.floor_len - 1} messages, "
                f"mnesis {run.first_len - 1}"
            )
        cold, steady, floor = median(run.cold), median(run.steady), median(run.floor)
        report.rows.append(
            [
                f"{run.size:,}",
                f"{run.first_len - 1:,}",
                fmt_ms(median(run.load)),
                fmt_ms(cold),
                fmt_ms(p95(run.cold)),
                fmt_ms(steady),
                fmt_ms(p95(run.steady)),
                fmt_ms(floor),
                fmt_ms(p95(run.floor)),
                ratio(cold, floor),
                ratio(steady, floor),
                ratio(cold, base_cold),
                ratio(steady, base_steady),
            ]
        )
    report.notes.append(
        f"Goal: flat in session length (largest within 1.5x of smallest). {reps} rounds, each "
        "measuring every length in turn: cold = a fresh ContextBuilder (empty rendering "
        "cache), steady = 3 calls of session.context_for_next_turn() (cache warm), floor = "
        "the same context with plain SQL (summaries through their partial index, newest "
        "message items until the budget is full, their messages and parts, JSON decoded and "
        "joined). SQLite's page cache is warm throughout. load() = MnesisSession.load()."
    )
    return report
