"""Memory and tail latency over a long session: is anything kept per turn?

One session records ``--turns`` turns through ``MnesisSession.record()`` (auto
compaction off, so every turn does the same work). Per bucket of ``--bucket`` turns
it prints the resident set size at the end of the bucket, its growth per turn within
the bucket, and ``record()`` p50 / p99 / max. Flat means: RSS growth per turn near 0
in the late buckets and the last bucket's record() max within a small factor of the
first's.

    PYTHONPATH=src python -m benchmarks.bench_memory --turns 50000 --bucket 2000
    PYTHONPATH=src python -m benchmarks.bench_memory --turns 10000 --bucket 1000 --tool-output 2000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tempfile
import time

from benchmarks.bench_session import Workload, no_auto_config
from mnesis import MnesisSession, StorePool

__all__ = ["main", "run"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """The current resident set size of this process (Linux ``/proc``; else 0)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except OSError:
        return 0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(turns: int, bucket: int, tool_output: int, workdir: str) -> list[dict[str, float]]:
    """Record ``turns`` turns; one row of measurements per ``bucket`` turns."""
    workload = Workload(tool_output_chars=tool_output)
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/bench",
        db_path=os.path.join(workdir, "memory.db"),
        config=no_auto_config(),
        pool=pool,
    )
    rows: list[dict[str, float]] = []
    try:
        gc.collect()
        start_rss = rss_bytes()
        bucket_rss = start_rss
        samples: list[float] = []
        for turn in range(turns):
            user = workload.user_text(turn)
            parts = workload.assistant_parts(turn)
            started = time.perf_counter()
            await session.record(user, parts)
            samples.append((time.perf_counter() - started) * 1000)
            if len(samples) == bucket:
                now = rss_bytes()
                rows.append(
                    {
                        "turns": turn + 1,
                        "rss_mb": now / 2**20,
                        "growth_b_per_turn": (now - bucket_rss) / bucket,
                        "p50": _pct(samples, 0.50),
                        "p99": _pct(samples, 0.99),
                        "max": max(samples),
                    }
                )
                print(_format(rows[-1]), flush=True)
                bucket_rss = now
                samples = []
        print(_sizes(os.path.join(workdir, "memory.db"), start_rss), flush=True)
    finally:
        await session.close()
        await pool.close_all()
    return rows


def _sizes(db: str, start_rss: int) -> str:
    wal = db + "-wal"
    wal_mb = os.path.getsize(wal) / 2**20 if os.path.exists(wal) else 0.0
    return (
        f"# start RSS {start_rss / 2**20:.1f} MB; database {os.path.getsize(db) / 2**20:.1f} MB"
        f"; WAL {wal_mb:.1f} MB"
    )


def _format(row: dict[str, float]) -> str:
    return (
        f"| {int(row['turns']):,} | {row['rss_mb']:.1f} | {row['growth_b_per_turn']:.0f} "
        f"| {row['p50']:.2f} | {row['p99']:.2f} | {row['max']:.1f} |"
    )


def main() -> None:
    """Command line: print one Markdown row per bucket."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50_000)
    parser.add_argument("--bucket", type=int, default=2_000)
    parser.add_argument("--tool-output", type=int, default=0, help="chars of tool output a turn")
    args = parser.parse_args()
    print(f"# load average at start: {os.getloadavg()[0]:.2f}")
    print("| turns | RSS MB | RSS growth B/turn | record p50 ms | p99 ms | max ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="mnesis-memory-") as workdir:
        asyncio.run(run(args.turns, args.bucket, args.tool_output, workdir))
    print(f"# load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
