"""Storage cost: bytes on disk per byte of text, and ``record()`` time per message.

    python -m benchmarks.bench_storage [--turns 2000] [--quick] [--json]

Two workloads of ``benchmarks.bench_session.Workload`` recorded through
``MnesisSession.record()`` (auto compaction off), one turn = a user message and an
assistant message:

* *chat*: ~200-character user text, ~300-character reply, no tools (what the
  hardening campaign measured: 1,882 B per message, 7.55 B per byte of text);
* *agent*: the same plus a ``read_file`` tool call with ~2 KB of code output.

"Text" is the UTF-8 size of every text the caller gave (user text, reply text, tool
output). "On disk" is the database file after the session is closed and the WAL is
checkpointed into it (the full-text index included), not vacuumed; "without free
pages" leaves out the pages on SQLite's free list (FTS5 segment merges free pages that
later writes reuse; how many are free at the end depends on when the background merge
ran). The breakdown (``dbstat``) names the largest tables and indexes, in bytes per byte
of text.

It uses only the public API, so the same script measures an older checkout (run it
with that checkout's ``src`` first on ``PYTHONPATH``) for a before/after comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import tempfile
import time
from dataclasses import dataclass, field

from benchmarks.bench_session import Workload, no_auto_config
from mnesis import MnesisSession, StorePool, TextPart, ToolPart

__all__ = ["StorageResult", "main", "measure"]


@dataclass
class StorageResult:
    """One workload's measurements."""

    workload: str
    turns: int
    text_bytes: int
    disk_bytes: int
    free_bytes: int = 0
    """Pages of the file on SQLite's free list (left by FTS5 segment merges, reused by
    later writes; how many depends on when the background merge ran)."""
    record_ms: list[float] = field(default_factory=list)
    record_cpu: float = 0.0
    """CPU seconds of the process (all threads: the store's writer too) spent in
    ``record()``, every turn."""
    breakdown: list[tuple[str, int]] = field(default_factory=list)

    @property
    def per_byte(self) -> float:
        """Bytes on disk per byte of text."""
        return self.disk_bytes / self.text_bytes

    @property
    def used_per_byte(self) -> float:
        """Bytes on disk per byte of text, free pages left out."""
        return (self.disk_bytes - self.free_bytes) / self.text_bytes

    @property
    def per_message(self) -> float:
        """Bytes on disk per stored message."""
        return self.disk_bytes / (2 * self.turns)

    @property
    def ms_per_message(self) -> float:
        """Median ``record()`` time per message (a turn records two)."""
        return statistics.median(self.record_ms) / 2

    @property
    def cpu_ms_per_message(self) -> float:
        """``record()`` CPU time per message, over every turn."""
        return self.record_cpu * 1000 / (2 * self.turns)


def _text_size(user: str, parts: list[TextPart | ToolPart]) -> int:
    size = len(user.encode())
    for part in parts:
        if isinstance(part, TextPart):
            size += len(part.text.encode())
        elif part.output:
            size += len(part.output.encode())
    return size


async def measure(name: str, turns: int, tool_output: int, workdir: str) -> StorageResult:
    """Record ``turns`` turns of one workload into a fresh database and measure it."""
    path = os.path.join(workdir, f"{name}.db")
    workload = Workload(tool_output_chars=tool_output)
    pool = StorePool()
    result = StorageResult(name, turns, 0, 0)
    try:
        session = await MnesisSession.create(
            model="fake/bench", db_path=path, config=no_auto_config(), pool=pool
        )
        for turn in range(turns):
            user = workload.user_text(turn)
            parts = workload.assistant_parts(turn)
            result.text_bytes += _text_size(user, parts)  # type: ignore[arg-type]
            started, cpu = time.perf_counter(), time.process_time()
            await session.record(user, parts)
            result.record_cpu += time.process_time() - cpu
            result.record_ms.append((time.perf_counter() - started) * 1000)
        await session.close()
    finally:
        await pool.close_all()
    _on_disk(path, result)
    return result


def _on_disk(path: str, result: StorageResult) -> None:
    """Checkpoint the WAL into the file, then its size and largest objects."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        result.free_bytes = page * conn.execute("PRAGMA freelist_count").fetchone()[0]
        try:
            result.breakdown = conn.execute(
                "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 8"
            ).fetchall()
        except sqlite3.OperationalError:
            result.breakdown = []  # SQLite built without dbstat
    finally:
        conn.close()
    result.disk_bytes = os.path.getsize(path)


def _table(results: list[StorageResult]) -> str:
    lines = [
        "| workload | turns | text bytes | on disk | B on disk / B of text "
        "| without free pages | B / message | record() ms / message (median) "
        "| record() CPU ms / message |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.workload} | {r.turns:,} | {r.text_bytes:,} | {r.disk_bytes:,} "
            f"| {r.per_byte:.2f} | {r.used_per_byte:.2f} | {r.per_message:,.0f} "
            f"| {r.ms_per_message:.3f} | {r.cpu_ms_per_message:.3f} |"
        )
    for r in results:
        parts = ", ".join(f"{n} {b / r.text_bytes:.2f}" for n, b in r.breakdown)
        lines.append(f"\n{r.workload}, largest objects (B per B of text): {parts}")
    return "\n".join(lines)


async def run(turns: int) -> list[StorageResult]:
    """Both workloads, ``turns`` turns each."""
    with tempfile.TemporaryDirectory(prefix="mnesis-storage-") as workdir:
        return [
            await measure("chat", turns, 0, workdir),
            await measure("agent", turns, 2000, workdir),
        ]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.bench_storage``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_storage")
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="300 turns")
    parser.add_argument("--json", action="store_true", help="print JSON, not Markdown")
    args = parser.parse_args(argv)
    results = asyncio.run(run(300 if args.quick else args.turns))
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "workload": r.workload,
                        "per_byte": r.per_byte,
                        "used_per_byte": r.used_per_byte,
                        "per_message": r.per_message,
                        "ms_per_message": r.ms_per_message,
                        "cpu_ms_per_message": r.cpu_ms_per_message,
                    }
                    for r in results
                ]
            )
        )
    else:
        print("### Storage: bytes on disk per byte of text, record() per message\n")
        print(_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
