"""``mnesis report`` on generated long sessions: wall time, CPU time, peak RSS, page size.

Each session is written through the import path (``import_file`` of a generated
generic-JSONL transcript, batched writes; not one ``record()`` per turn): user / assistant
turns, the assistant with a ``read_file`` call whose output is ~2 KB of code
(``Workload``'s texts). Then it is compacted *after the import*, as a session imported and
compacted afterwards is: leaf
summaries over the oldest 95% of the messages (200 messages each, committed with
``commit_compaction`` like the engine does), condensed summaries over 10 leaves each and one
level above those, and the tool outputs of the newest 5% pruned (``tombstone_parts``).

The report runs as ``python -m mnesis.cli report`` in a child process, so its peak RSS and
CPU time are its own (``os.wait4``'s resource usage of that child).

    python -m benchmarks.bench_report                 # 10k, 50k, 200k messages
    python -m benchmarks.bench_report --sizes 200000  # one size
    python -m benchmarks.bench_report --quick         # 5k, 20k
    python -m benchmarks.bench_report --baseline-src /path/to/older/checkout/src
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.bench_session import Workload
from mnesis import StorePool
from mnesis.importers.api import import_file
from mnesis.models.ids import new_id
from mnesis.models.parts import ToolPart
from mnesis.models.summary import SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.store.summary_marker import summary_commit
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

LEAF_MESSAGES = 200
FAN_IN = 10
_TOMBSTONE_TOKENS = 12


async def _summarise(store: ImmutableStore, session_id: str, n: int) -> tuple[int, int]:
    """Leaf, condensed and depth-2 summaries over the oldest 95% of the session, then the
    newest 5%'s tool outputs pruned; returns ``(summaries, pruned outputs)``."""
    estimator = TokenEstimator()
    items = await store.get_context_items(session_id)
    positions = [(i.position, i.item_id) for i in items if i.item_type == "message"]
    covered = positions[: int(n * 0.95) // LEAF_MESSAGES * LEAF_MESSAGES]
    now = int(time.time() * 1000)
    level: list[tuple[int, SummaryRecord]] = []
    for start in range(0, len(covered), LEAF_MESSAGES):
        chunk = covered[start : start + LEAF_MESSAGES]
        now += 1
        node = SummaryRecord(
            id=new_id("sum"),
            session_id=session_id,
            kind="leaf",
            depth=0,
            level=1,
            content=f"Messages {start + 1} to {start + len(chunk)}: the agent read modules "
            f"module_{start % 997}.py and following, and fixed the config path. " * 8,
            token_count=420,
            span_start_message_id=chunk[0][1],
            span_end_message_id=chunk[-1][1],
            source_message_count=len(chunk),
            created_at=now,
        )
        await store.commit_compaction(
            summary_commit(
                node, estimator, sources=[m for _, m in chunk], parents=[], replaced=chunk
            )
        )
        level.append((chunk[0][0], node))
    made = len(level)
    for depth in (1, 2):
        above: list[tuple[int, SummaryRecord]] = []
        for start in range(0, len(level) - FAN_IN + 1, FAN_IN):
            group = level[start : start + FAN_IN]
            now += 1
            node = SummaryRecord(
                id=new_id("sum"),
                session_id=session_id,
                kind="condensed",
                depth=depth,
                level=1,
                content=f"Condensed {len(group)} summaries at depth {depth - 1}. " * 10,
                token_count=300,
                span_start_message_id=group[0][1].span_start_message_id,
                span_end_message_id=group[-1][1].span_end_message_id,
                source_message_count=sum(s.source_message_count for _, s in group),
                created_at=now,
            )
            await store.commit_compaction(
                summary_commit(
                    node,
                    estimator,
                    sources=[],
                    parents=[s.id for _, s in group],
                    replaced=[(p, s.id) for p, s in group],
                )
            )
            above.append((group[0][0], node))
        made += len(above)
        level = above
    return made, await _prune(store, session_id, positions[int(n * 0.95) :], now + 1)


async def _prune(
    store: ImmutableStore, session_id: str, tail: list[tuple[int, str]], at: int
) -> int:
    pruned = 0
    estimator = TokenEstimator()
    for start in range(0, len(tail), 500):
        ids = [m for _, m in tail[start : start + 500]]
        parts: list[tuple[str, int, int]] = []
        estimates: list[tuple[str, int]] = []
        for message in await store.get_messages_by_ids(ids):
            tools = [p for p in message.parts if isinstance(p, ToolPart) and p.output]
            if not tools:
                continue
            parts.extend((p.id, at, _TOMBSTONE_TOKENS) for p in tools if p.id is not None)
            freed = sum(estimator.estimate(p.output or "") - _TOMBSTONE_TOKENS for p in tools)
            kept = max(MESSAGE_OVERHEAD_TOKENS, message.message.token_estimate - freed)
            estimates.append((message.id, kept))
        if parts:
            await store.tombstone_parts(parts, estimates)
            pruned += len(parts)
    return pruned


def write_transcript(path: str, n: int) -> None:
    """A generic-JSONL transcript of ``n`` messages (user, then assistant with a
    ``read_file`` call and its ~2 KB result), one minute per turn."""
    workload = Workload()
    with open(path, "w", encoding="utf-8") as out:
        for turn in range(n // 2):
            at = 1_700_000_000_000 + turn * 60_000
            call = workload.tool_call(turn)
            assert call is not None
            lines = [
                {"role": "user", "content": workload.user_text(turn), "timestamp": at},
                {
                    "role": "assistant",
                    "content": workload.reply_texts[turn % len(workload.reply_texts)],
                    "timestamp": at + 1_000,
                    "model": "bench",
                    "tool_calls": [
                        {
                            "id": call["tool_call_id"],
                            "name": call["tool_name"],
                            "input": call["input"],
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": call["tool_call_id"],
                    "content": call["output"],
                    "timestamp": at + 2_000,
                },
            ]
            out.write("".join(json.dumps(line) + "\n" for line in lines))


async def build(path: str, n: int) -> tuple[str, int, int, float]:
    """A session of ``n`` messages imported, then compacted: ``(session ID, summaries,
    pruned outputs, seconds to build)``."""
    started = time.perf_counter()
    transcript = path + ".jsonl"
    write_transcript(transcript, n)
    pool = StorePool()
    store = await pool.acquire(path)
    try:
        imported = await import_file(store, transcript, "jsonl")
        session_id = imported.session_ids[0]
        summaries, pruned = await _summarise(store, session_id, n)
    finally:
        await store.close()
        await pool.close_all()
        os.remove(transcript)
    return session_id, summaries, pruned, time.perf_counter() - started


_Run = tuple[float, float, float, str]


def run_report(
    path: str, session_id: str, out: str, *, src: str | None = None, timeout: float = 1800
) -> _Run | None:
    """``mnesis report`` in a child process (from the source tree ``src`` when given):
    ``(wall s, CPU s, peak RSS MB, stderr)``, or None past ``timeout`` seconds."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "mnesis.cli", "report", session_id, "-o", out, "--db", path],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
        timer = threading.Timer(timeout, child.kill)
        timer.start()
        try:
            # wait4: this child's own rusage (peak RSS and CPU of nothing else).
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        err.seek(0)
        said = err.read().decode("utf-8", "replace").strip()
    if child.returncode == -signal.SIGKILL:
        return None
    if child.returncode != 0:
        raise RuntimeError(f"mnesis report failed ({child.returncode}): {said}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, said


def _row(
    label: str, n: int, db_mb: float, made: tuple[int, int], run: _Run | None, out: str
) -> str:
    if run is None:
        return f"| {label} | {n:,} | {db_mb:,.0f} | {made[0]:,} | {made[1]:,} | timeout | | | | |"
    wall, cpu, rss, _ = run
    html_mb = Path(out).stat().st_size / 1e6
    return (
        f"| {label} | {n:,} | {db_mb:,.0f} | {made[0]:,} | {made[1]:,} | {wall:.1f} | {cpu:.1f} "
        f"| {cpu / n * 1e6:,.0f} | {rss:,.0f} | {html_mb:.1f} |"
    )


def main() -> None:
    """Build each size, report it, print one Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 200_000])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--baseline-src",
        help="also run the report of another source tree (its src/ folder) on the sizes up "
        "to --baseline-max, for a before / after table",
    )
    parser.add_argument("--baseline-max", type=int, default=10_000)
    parser.add_argument("--baseline-timeout", type=float, default=600)
    args = parser.parse_args()
    sizes = sorted([5_000, 20_000] if args.quick else args.sizes)
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-report-") as workdir:
        for n in sizes:
            path = os.path.join(workdir, f"report-{n}.db")
            session_id, summaries, pruned, built = asyncio.run(build(path, n))
            db_mb = os.path.getsize(path) / 1e6
            print(f"built {n:,} messages in {built:.1f} s ({db_mb:,.0f} MB)", flush=True)
            if args.baseline_src and n <= args.baseline_max:
                out = os.path.join(workdir, f"baseline-{n}.html")
                run = run_report(
                    path, session_id, out, src=args.baseline_src, timeout=args.baseline_timeout
                )
                rows.append(_row("baseline", n, db_mb, (summaries, pruned), run, out))
                print(f"  baseline: {rows[-1]}", flush=True)
            out = os.path.join(workdir, f"report-{n}.html")
            run = run_report(path, session_id, out)
            print(f"  {run[3] if run else 'timeout'}", flush=True)
            rows.append(_row("this tree", n, db_mb, (summaries, pruned), run, out))
            os.remove(path)
    print(f"load average at end: {os.getloadavg()[0]:.2f}\n")
    print(
        "| report | messages | database MB | summaries | pruned outputs | wall s | CPU s "
        "| CPU µs / message | peak RSS MB | page MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
