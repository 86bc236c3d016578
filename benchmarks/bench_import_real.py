"""Transcript import rate on real-shaped Claude Code files (issue 30, item 5).

:mod:`benchmarks.bench_import` imports small synthetic exchanges (a sentence, a 400-byte
tool output). A real Claude Code 2.1 session is different: :mod:`benchmarks._real_session`
writes one like it (thinking with signatures, tool results carried twice per line,
``Read`` output numbered with a non-ASCII arrow, edits carrying the whole file, bash,
hook and sub-agent ``progress`` records, sub-agent files), about 7 KB of file per
stored message as the issue's 1.44 GB / 201,600-message session. The session's file is
imported, then its sub-agents' files, as ``mnesis import`` of the folder does.

Two floors: reading and decoding the JSONL alone (plain ``orjson.loads`` of each line,
and the import's own reader), on one core; and the database's own writes of the rows
the import stored (plain ``sqlite3`` ``executemany``, as in ``bench_import``). CPU
seconds are reported for the writing process and the parser process (a file of 8 MB
or more is parsed in a process of its own) apart; on a shared machine they move far
less than the wall clock. Run:

    python -m benchmarks.bench_import_real [--exchanges 3000] [--profile]

``--profile`` runs the parser process's work (reading, parsing, batches, rows) under
cProfile in this process and prints where its time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import resource
import sys
import tempfile
import time
from typing import TextIO

import orjson

from benchmarks._real_session import SESSION_ID, realistic_lines, realistic_session
from mnesis.importers import import_file
from mnesis.importers.parse_child import ParseJob, run
from mnesis.importers.pipeline import Limits
from mnesis.importers.reader import read_jsonl
from mnesis.store.immutable import ImmutableStore

__all__ = ["realistic_lines", "write_session"]

_BYTECODE_NOTE = (
    "\n  (PYTHONDONTWRITEBYTECODE is set: without cached bytecode the parser process "
    "compiles its modules at each start, a few tenths of a second more than an install)"
)


def write_session(folder: str, exchanges: int) -> tuple[str, list[str], int]:
    """Write the session's file and its sub-agents' files under ``folder``: the
    session's path, the sub-agents' paths and the bytes of all."""
    main = os.path.join(folder, f"{SESSION_ID}.jsonl")
    agents = os.path.join(folder, SESSION_ID, "subagents")
    os.makedirs(agents, exist_ok=True)
    handles: dict[str | None, TextIO] = {None: open(main, "w", encoding="utf-8")}  # noqa: SIM115
    try:
        for agent, line in realistic_session(exchanges):
            handle = handles.get(agent)
            if handle is None:
                path = os.path.join(agents, f"agent-{agent}.jsonl")
                handle = handles[agent] = open(path, "w", encoding="utf-8")  # noqa: SIM115
            handle.write(line + "\n")
    finally:
        for handle in handles.values():
            handle.close()
    paths = sorted(os.path.join(agents, name) for name in os.listdir(agents))
    return main, paths, sum(os.path.getsize(p) for p in (main, *paths))


def _rusage() -> tuple[float, float]:
    """CPU seconds of this process (every thread) and of its children that ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def floor_seconds(paths: list[str]) -> tuple[float, float, int]:
    """CPU seconds to decode every line of ``paths`` with plain ``orjson.loads`` and
    with the import's own reader, and the line count."""
    started = time.process_time()
    count = 0
    for path in paths:
        with open(path, "rb") as handle:
            for raw in handle:
                orjson.loads(raw)
                count += 1
    plain = time.process_time() - started
    started = time.process_time()
    for path in paths:
        for _ in read_jsonl(path):
            pass
    return plain, time.process_time() - started, count


def parser_seconds(path: str) -> float:
    """CPU seconds of the parser process's work on ``path`` (read, parse, cut batches,
    build their rows and encode them for the pipe) in this process, without its start."""
    job = ParseJob(path, "claude-code", 0, 0, Limits(5000, 4_000_000), starts={})
    enabled = gc.isenabled()
    gc.disable()  # as the parser process runs
    try:
        with open(os.devnull, "wb") as out:
            started = time.process_time()
            run(job, out)
            return time.process_time() - started
    finally:
        if enabled:
            gc.enable()


def profile(path: str, top: int = 30) -> None:
    """Print where the parser process's work goes."""
    profiler = cProfile.Profile()
    profiler.runcall(parser_seconds, path)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


async def _run(exchanges: int, show_profile: bool) -> None:
    from benchmarks.bench_import import _floor_lines, _floors  # psycopg and the rest

    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        main, agents, size = write_session(tmp, exchanges)
        plain, floor, lines = floor_seconds([main, *agents])
        parse = parser_seconds(main)
        if show_profile:
            profile(main)
        db = os.path.join(tmp, "import.db")
        store = await ImmutableStore.open(db)
        try:
            started, (own, child) = time.perf_counter(), _rusage()
            report = await import_file(store, main)
            added = report.messages_added
            for path in agents:
                added += (await import_file(store, path)).messages_added
            wall = time.perf_counter() - started
            own, child = (
                after - before for after, before in zip(_rusage(), (own, child), strict=True)
            )
        finally:
            await store.close()
        n, mb, cpu = added, size / 1e6, own + child
        writes = await _floors(tmp, db, ())
        end_load = os.getloadavg()
        print(
            f"{exchanges:,} exchanges: {mb:.1f} MB in {1 + len(agents)} files, {lines:,} lines "
            f"({size / n / 1e3:.1f} KB of file per message) → {n:,} messages\n"
            f"  load average {load[0]:.1f} / {load[1]:.1f} before, {end_load[0]:.1f} / "
            f"{end_load[1]:.1f} after (1 / 5 min; {os.cpu_count()} cores)\n"
            f"  import: {wall:.2f} s wall, {cpu:.2f} s CPU (writing process {own:.2f} s, "
            f"parser process {child:.2f} s): {n / wall:,.0f} messages/s, {mb / wall:.1f} MB/s "
            f"wall; {n / cpu:,.0f} messages and {mb / cpu:.1f} MB per CPU-second\n"
            f"  parser process's work in-process (no start): {parse:.2f} s CPU, "
            f"{n / parse:,.0f} messages and {mb / parse:.1f} MB per CPU-second (session file)"
            f"{_BYTECODE_NOTE if sys.flags.dont_write_bytecode else ''}\n"
            f"  floor, orjson.loads of each line: {plain:.2f} s CPU, {n / plain:,.0f} messages "
            f"and {mb / plain:.1f} MB per CPU-second\n"
            f"  floor, the import's reader (every line decoded): {floor:.2f} s CPU, "
            f"{n / floor:,.0f} messages and {mb / floor:.1f} MB per CPU-second\n"
            f"  import CPU / orjson floor CPU: {cpu / plain:.2f}x\n"
            f"  the database's own share (sqlite3 executemany of the stored rows):\n"
            f"{_floor_lines(writes, n)}"
        )


def main() -> None:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--exchanges", type=int, default=3000)
    parser.add_argument("--profile", action="store_true", help="Profile the parser process.")
    args = parser.parse_args()
    asyncio.run(_run(args.exchanges, args.profile))


if __name__ == "__main__":
    main()
