"""Transcript import rate: a generated Claude Code session file into a fresh SQLite file.

The file has ``turns`` user/assistant exchanges; every other assistant message makes a
tool call answered by a tool result (so 4 lines per exchange with a tool, 2 without).
The rate counts stored messages (a tool-result line becomes part of the assistant
message that made the call, not a message of its own). The floor is the time plain
``sqlite3`` ``executemany`` takes to insert the very rows the import stored into a fresh
database of the same schema (indexes, the full-text index filled as ``append_batch``
fills it), and the same without the full-text index: what the database itself costs.
CPU seconds are reported next to the wall clock, for the writing process (every thread)
and for the parser process a large import starts (see ``mnesis.importers.process``): on
a shared machine they move far less than the wall clock does. Run:

    python -m benchmarks.bench_import [--turns 50000] [--postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence

import psycopg

from benchmarks._import_floor import FloorTimes, floor_rows, run_floor
from benchmarks._pg import with_database
from benchmarks.bench_postgres import pg_server
from mnesis.importers import import_file
from mnesis.store.immutable import ImmutableStore


def claude_code_lines(turns: int, *, output_bytes: int = 400) -> Iterator[str]:
    """The lines of a Claude Code session file with ``turns`` exchanges."""
    session = "0f9d7a52-1111-4c55-9a7e-2f6d1c0e8b11"
    base = {"sessionId": session, "cwd": "/home/ada/project", "isSidechain": False}
    filler = ("log line with some words and numbers 12345 " * (output_bytes // 40 + 1))[
        :output_bytes
    ]
    for i in range(turns):
        stamp = f"2025-06-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
        user = {"role": "user", "content": f"Step {i}: please check the build of module {i % 97}"}
        yield json.dumps(
            {**base, "type": "user", "uuid": f"u{i}", "timestamp": stamp, "message": user}
        )
        content: list[dict[str, object]] = [{"type": "text", "text": f"Checking module {i % 97}."}]
        if i % 2 == 0:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{i}",
                    "name": "Bash",
                    "input": {"command": f"make m{i}"},
                }
            )
        assistant = {
            "id": f"msg_{i}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
        }
        yield json.dumps(
            {**base, "type": "assistant", "uuid": f"a{i}", "timestamp": stamp, "message": assistant}
        )
        if i % 2 == 0:
            result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": filler}
            yield json.dumps(
                {
                    **base,
                    "type": "user",
                    "uuid": f"r{i}",
                    "timestamp": stamp,
                    "message": {"role": "user", "content": [result]},
                }
            )


def write_transcript(path: str, turns: int) -> int:
    """Write the generated session file; returns its size in bytes."""
    with open(path, "w", encoding="utf-8") as handle:
        for line in claude_code_lines(turns):
            handle.write(line + "\n")
    return os.path.getsize(path)


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's children that have ended (the
    import's parser process, once it has been waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _floors(tmp: str, source: str, pragmas: Sequence[str]) -> dict[str, FloorTimes]:
    """The floor with the full-text index, without it, and with each of ``pragmas``."""
    rows = floor_rows(source)
    runs: dict[str, FloorTimes] = {}
    variants: list[tuple[str, bool, tuple[str, ...]]] = [("floor", True, ()), ("no FTS", False, ())]
    variants += [(pragma, True, (pragma,)) for pragma in pragmas]
    for index, (name, fts, extra) in enumerate(variants):
        target = os.path.join(tmp, f"floor{index}.db")
        await (await ImmutableStore.open(target)).close()
        runs[name] = run_floor(rows, target, fts=fts, pragmas=extra)
    return runs


def _floor_lines(runs: dict[str, FloorTimes], n: int) -> str:
    lines = []
    for name, times in runs.items():
        per = ", ".join(f"{k} {v / n * 1e6:.1f}" for k, v in times.statements.items())
        lines.append(
            f"  {name}: {times.wall:.2f} s wall, {times.cpu:.2f} s CPU = "
            f"{times.cpu / n * 1e6:.1f} µs per message ({n / times.cpu:,.0f} per "
            f"CPU-second); µs per message: {per}"
        )
    return "\n".join(lines)


async def _run(turns: int, pragmas: Sequence[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "session.jsonl")
        size = write_transcript(path, turns)
        db = os.path.join(tmp, "import.db")
        store = await ImmutableStore.open(db)
        try:
            started, cpu, child = time.perf_counter(), time.process_time(), _children_cpu()
            report = await import_file(store, path)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            child = _children_cpu() - child
            again = time.perf_counter()
            second = await import_file(store, path)
            unchanged = time.perf_counter() - again
        finally:
            await store.close()
        floors = await _floors(tmp, db, pragmas)
        n = report.messages_added
        floor, floor_cpu = floors["floor"].wall, floors["floor"].cpu
        total = cpu + child
        print(
            f"{turns:,} exchanges, {size / 1e6:.1f} MB, {report.lines_read:,} lines → "
            f"{n:,} messages in {elapsed:.2f} s: {n / elapsed:,.0f} messages/s wall; CPU "
            f"{cpu:.2f} s in the writing process (all threads, {cpu / n * 1e6:.1f} µs per "
            f"message) + {child:.2f} s in the parser process ({child / n * 1e6:.1f} µs) = "
            f"{n / total:,.0f} messages per CPU-second, "
            f"{size / 1e6 / elapsed:.1f} MB/s; re-import ({second.status}) "
            f"{unchanged * 1000:.1f} ms\n"
            f"floor (sqlite3 executemany of the same rows, as append_batch writes them):\n"
            f"{_floor_lines(floors, n)}\n"
            f"import / floor: {elapsed / floor:.2f}x the time, {cpu / floor_cpu:.2f}x the "
            f"writing process's CPU, {total / floor_cpu:.2f}x all CPU"
        )


def _new_database(dsn: str) -> str:
    name = f"mnesis_import_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8'")
    return with_database(dsn, name)


async def _run_postgres(turns: int) -> None:
    """The same import into a fresh PostgreSQL database (``MNESIS_BENCH_PG_DSN`` or a
    throwaway cluster); CPU is this process's only (the server's is not counted)."""
    with tempfile.TemporaryDirectory() as tmp, pg_server() as dsn:
        path = os.path.join(tmp, "session.jsonl")
        size = write_transcript(path, turns)
        store = await ImmutableStore.open(_new_database(dsn))
        try:
            started, cpu = time.perf_counter(), time.process_time()
            report = await import_file(store, path)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        finally:
            await store.close()
        print(
            f"PostgreSQL: {turns:,} exchanges, {size / 1e6:.1f} MB → "
            f"{report.messages_added:,} messages in {elapsed:.2f} s: "
            f"{report.messages_added / elapsed:,.0f} messages/s (client CPU {cpu:.2f} s)"
        )


def main() -> None:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50_000)
    parser.add_argument(
        "--postgres", action="store_true", help="Import into PostgreSQL instead of SQLite."
    )
    parser.add_argument(
        "--pragma",
        action="append",
        default=[],
        help="Also run the floor with this statement after the store's pragmas (repeatable).",
    )
    args = parser.parse_args()
    if args.postgres:
        asyncio.run(_run_postgres(args.turns))
    else:
        asyncio.run(_run(args.turns, args.pragma))


if __name__ == "__main__":
    main()
