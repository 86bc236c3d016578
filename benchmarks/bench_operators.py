"""Operator benchmarks: LLMMap overhead per item and AgenticMap items per second.

Usage::

    python benchmarks/bench_operators.py            # 10,000 LLMMap items, 200 AgenticMap items
    python benchmarks/bench_operators.py --quick    # 2,000 and 50

The model is the built-in fake answering in one chunk, so the times are the price
of the operators themselves. Each table has a *floor*: the same model calls (or,
for AgenticMap, the same sub-sessions: create, one turn, close) made one after
another without the operator. ``overhead`` is the operator's time per item minus
the floor's: for LLMMap the template, the worker pool, the result objects and the
queue; for AgenticMap the ``map_items`` bookkeeping (three writes per item) and the
scheduling. Standalone: it prints its tables and touches only a temp directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel

from mnesis import CompactionConfig, MnesisConfig, MnesisSession, OperatorConfig, StorePool
from mnesis.llm import FakeLLM, LLMRequest, complete
from mnesis.operators import AgenticMap, LLMMap

MODEL = "fake/bench"
TEMPLATE = "Extract the person described in: {{ item }}"
REPLY = '{"name": "Ada", "age": 36}'


class Person(BaseModel):
    name: str
    age: int


def instant_llm() -> FakeLLM:
    """The fake model answering ``REPLY`` in one chunk, with no delay."""
    return FakeLLM(reply=lambda request: REPLY, chunk_chars=1 << 20)


def session_config() -> MnesisConfig:
    return MnesisConfig(compaction=CompactionConfig(auto=False))


REPEAT = 2


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    """The best of ``REPEAT`` runs (the first one also warms caches up)."""
    best = float("inf")
    for _ in range(REPEAT):
        started = time.perf_counter()
        await fn()
        best = min(best, time.perf_counter() - started)
    return best


# -- LLMMap -------------------------------------------------------------------------
async def llm_map_floor(items: list[str]) -> float:
    """The same model calls, one after another, without LLMMap."""
    llm = instant_llm()

    async def calls() -> None:
        for item in items:
            request = LLMRequest(
                model=MODEL,
                messages=[{"role": "user", "content": f"Extract the person described in: {item}"}],
                purpose="map",
            )
            await complete(llm, request, timeout=120.0)

    return await timed(calls)


async def bench_llm_map(count: int, workdir: Path) -> list[list[str]]:
    items = [f"person number {i}, a mathematician" for i in range(count)]
    floor = await llm_map_floor(items)
    rows = [_row("floor: sequential model calls", count, floor, floor)]
    cases: list[tuple[str, int, bool]] = [
        ("run_all, no schema, concurrency 1", 1, False),
        ("run_all, no schema, concurrency 16", 16, False),
        ("run_all, no schema, concurrency 64", 64, False),
        ("run_all, pydantic schema, concurrency 16", 16, True),
    ]
    for label, concurrency, with_schema in cases:
        operator = LLMMap(
            OperatorConfig(llm_map_concurrency=concurrency), llm=instant_llm(), model=MODEL
        )
        schema = Person if with_schema else None

        async def run(operator: LLMMap = operator, schema: type[Person] | None = schema) -> None:
            batch = await operator.run_all(items, TEMPLATE, output_schema=schema)
            assert batch.completed == count, batch.failures[:1]

        rows.append(_row(label, count, await timed(run), floor))

    source, target = workdir / "in.jsonl", workdir / "out.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        for item in items:
            handle.write(json.dumps(item) + "\n")
    operator = LLMMap(OperatorConfig(), llm=instant_llm(), model=MODEL)

    async def run_file() -> None:
        summary = await operator.run_jsonl(str(source), str(target), TEMPLATE, output_schema=Person)
        assert summary.completed == count

    rows.append(
        _row("run_jsonl, pydantic schema, concurrency 16", count, await timed(run_file), floor)
    )
    return rows


def _row(label: str, count: int, seconds: float, floor: float) -> list[str]:
    per_item = seconds / count
    overhead = (seconds - floor) / count
    return [
        label,
        f"{count:,}",
        f"{seconds:.2f}",
        f"{count / seconds:,.0f}",
        f"{per_item * 1e6:,.1f}",
        "-" if seconds == floor else f"{overhead * 1e6:,.1f}",
    ]


# -- AgenticMap ---------------------------------------------------------------------
async def agentic_floor(items: list[str], db_path: str) -> float:
    """The same sub-sessions (create, one turn, close), one after another."""
    pool = StorePool()
    llm = instant_llm()
    config = session_config()
    # Keep the file open between sessions, as the operator's own handle does.
    await pool.acquire(db_path=db_path)

    async def sessions() -> None:
        for item in items:
            session = await MnesisSession.create(
                model=MODEL, db_path=db_path, pool=pool, llm=llm, config=config
            )
            await session.send(f"Extract the person described in: {item}")
            await session.close()

    try:
        return await timed(sessions)
    finally:
        await pool.close_all()


async def bench_agentic_map(count: int, workdir: Path) -> list[list[str]]:
    items = [f"person number {i}, a mathematician" for i in range(count)]
    floor = await agentic_floor(items, str(workdir / "floor.db"))
    rows = [_agent_row("floor: sequential sub-sessions", count, floor, floor)]
    for concurrency in (1, 4, 16, 50):
        db_path = str(workdir / f"agentic-{concurrency}.db")
        pool = StorePool()
        operator = AgenticMap(
            OperatorConfig(agentic_map_concurrency=concurrency),
            model=MODEL,
            db_path=db_path,
            pool=pool,
            llm=instant_llm(),
            session_config=session_config(),
        )

        async def run(operator: AgenticMap = operator) -> None:
            batch = await operator.run_all(items, TEMPLATE)
            assert batch.completed == count, batch.failures[:1]

        try:
            seconds = await timed(run)
        finally:
            await pool.close_all()
        rows.append(_agent_row(f"run_all, concurrency {concurrency}", count, seconds, floor))
    return rows


def _agent_row(label: str, count: int, seconds: float, floor: float) -> list[str]:
    return [
        label,
        f"{count:,}",
        f"{seconds:.2f}",
        f"{count / seconds:,.0f}",
        f"{seconds / count * 1e3:,.2f}",
        "-" if seconds == floor else f"{(seconds - floor) / count * 1e3:,.2f}",
    ]


# -- output ---------------------------------------------------------------------------
def print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]

    def line(values: list[str]) -> str:
        return "  ".join(
            v.ljust(w) if i == 0 else v.rjust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        )

    print(f"\n{title}")
    print(line(columns))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


async def main_async(quick: bool) -> None:
    map_items, agent_items = (2_000, 50) if quick else (10_000, 200)
    with tempfile.TemporaryDirectory(prefix="mnesis-bench-operators-") as tmp:
        workdir = Path(tmp)
        llm_rows = await bench_llm_map(map_items, workdir)
        agent_rows = await bench_agentic_map(agent_items, workdir)
    print(
        f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, "
        f"{platform.machine()} x {os.cpu_count()}"
    )
    print_table(
        "LLMMap (instant fake model)",
        ["case", "items", "seconds", "items/s", "us/item", "overhead us/item"],
        llm_rows,
    )
    print_table(
        "AgenticMap (instant fake model, one SQLite file, compaction off)",
        ["case", "items", "seconds", "items/s", "ms/item", "overhead ms/item"],
        agent_rows,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2,000 and 50 items")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
