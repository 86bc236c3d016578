"""Load and fault run of compaction workers on PostgreSQL (issue 11).

``python -m benchmarks.pg_load --db postgresql://... [--writers 8 --sessions 25 --turns 30
--workers 3] [--restart-datadir DIR --restart-user postgres --restart-after 20]``

Two phases on fresh sessions of the same database:

1. ``inline``: no worker; sessions compact in their own process (the default mode).
2. ``worker``: ``--workers`` processes run ``mnesis worker``; sessions use
   ``compaction.mode = "worker"``. With ``--restart-datadir`` PostgreSQL is restarted
   (``pg_ctl restart -m fast``) during this phase.

Every writer process records ``--turns`` turns in each of its ``--sessions`` sessions
(round-robin) and logs each acknowledged message id. A turn that fails with a mnesis
store error (the restart) is retried; only acknowledged ids count. Afterwards: the
integrity checker over every session (``mnesis check``), duplicate ``seq`` / context
positions, and acknowledged messages missing from the database. Prints one Markdown
row per phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.crash_trials import campaign_config
from mnesis import MnesisSession
from mnesis.errors import MnesisStoreError
from mnesis.integrity import IntegrityChecker
from mnesis.llm import FakeLLM
from mnesis.store.immutable import ImmutableStore

TEXT = "lorem ipsum dolor sit amet " * 90


async def _writer(url: str, mode: str, sessions: int, turns: int) -> dict[str, Any]:
    config = campaign_config(compaction_model="extractive", mode=mode)
    opened = [
        await MnesisSession.create(model="fake/model", db_path=url, llm=FakeLLM(), config=config)
        for _ in range(sessions)
    ]
    latencies: list[float] = []
    acked: list[str] = []
    retries = 0
    for turn in range(turns):
        for session in opened:
            while True:
                started = time.perf_counter()
                try:
                    result = await session.record(f"q{turn} {TEXT}", f"a{turn} {TEXT}")
                except MnesisStoreError:
                    retries += 1
                    await asyncio.sleep(0.5)
                    continue
                latencies.append((time.perf_counter() - started) * 1000)
                acked += [result.user_message_id, result.assistant_message_id]
                break
    for session in opened:
        await session.close()
    return {"lat": latencies, "acked": acked, "retries": retries}


def _writer_main(url: str, mode: str, sessions: int, turns: int, out: str) -> None:
    Path(out).write_text(json.dumps(asyncio.run(_writer(url, mode, sessions, turns))))


async def _check(url: str, acked: list[str], since: float) -> dict[str, int]:
    store = await ImmutableStore.open(url)
    try:
        report = await IntegrityChecker(store).run()
    finally:
        await store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        dup_seq = conn.execute(
            "SELECT count(*) FROM (SELECT session_id, seq FROM messages "
            "GROUP BY 1, 2 HAVING count(*) > 1) d"
        ).fetchone()
        dup_pos = conn.execute(
            "SELECT count(*) FROM (SELECT session_id, position FROM context_items "
            "GROUP BY 1, 2 HAVING count(*) > 1) d"
        ).fetchone()
        found = conn.execute("SELECT count(*) FROM messages WHERE id = ANY(%s)", (acked,))
        present = found.fetchone()
        summaries = conn.execute(
            "SELECT count(*) FROM summaries WHERE created_at >= %s", (int(since * 1000),)
        ).fetchone()
    assert dup_seq and dup_pos and present and summaries
    return {
        "violations": len(report.violations),
        "dup_ordinals": int(dup_seq[0]) + int(dup_pos[0]),
        "lost": len(acked) - int(present[0]),
        "summaries": int(summaries[0]),
    }


def _restart(datadir: str, user: str | None, after: float) -> subprocess.Popen[bytes]:
    pg_ctl = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))[-1]
    cmd = [
        str(pg_ctl),
        "restart",
        "-m",
        "fast",
        "-D",
        datadir,
        "-w",
        "-l",
        os.path.join(datadir, "restart.log"),
    ]
    if user:
        cmd = ["runuser", "-u", user, "--", *cmd]
    return subprocess.Popen(["sh", "-c", f'sleep {after} && exec "$@"', "sh", *cmd])


def phase(args: argparse.Namespace, mode: str, workdir: Path) -> dict[str, Any]:
    """Run one phase; its numbers."""
    workers: list[subprocess.Popen[bytes]] = []
    if mode == "worker":
        for i in range(args.workers):
            log = open(workdir / f"worker{i}.log", "wb")  # noqa: SIM115
            workers.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "mnesis.cli",
                        "worker",
                        "--db",
                        args.db,
                        "--stalled-after",
                        "10",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        time.sleep(3)
    restart = None
    if mode == "worker" and args.restart_datadir:
        restart = _restart(args.restart_datadir, args.restart_user, args.restart_after)
    ctx = multiprocessing.get_context("spawn")
    started = time.time()
    procs = []
    for i in range(args.writers):
        out = str(workdir / f"{mode}-{i}.json")
        p = ctx.Process(target=_writer_main, args=(args.db, mode, args.sessions, args.turns, out))
        p.start()
        procs.append((p, out))
    for p, _ in procs:
        p.join()
    wall = time.time() - started
    if restart is not None:
        restart.wait()
    if workers:
        time.sleep(args.drain)
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(120)
    lat: list[float] = []
    acked: list[str] = []
    retries = 0
    for p, out in procs:
        assert p.exitcode == 0, f"writer {out} exited with {p.exitcode}"
        data = json.loads(Path(out).read_text())
        lat += data["lat"]
        acked += data["acked"]
        retries += data["retries"]
    checked = asyncio.run(_check(args.db, acked, started))
    lat.sort()
    return {
        "mode": mode,
        "messages_per_s": len(acked) / wall,
        "compactions_per_s": checked["summaries"] / wall,
        "p50_ms": statistics.median(lat),
        "p99_ms": lat[int(len(lat) * 0.99) - 1],
        "retried_turns": retries,
        **checked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=25)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument(
        "--drain",
        type=float,
        default=10.0,
        help="seconds the workers get to finish after the writers",
    )
    parser.add_argument("--restart-datadir")
    parser.add_argument("--restart-user")
    parser.add_argument("--restart-after", type=float, default=15.0)
    parser.add_argument("--phases", default="inline,worker")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mnesis-pgload-") as tmp:
        rows = [phase(args, mode, Path(tmp)) for mode in args.phases.split(",")]
    print(
        "| mode | messages/s | compactions/s | turn p50 ms | turn p99 ms | retried turns "
        "| violations | duplicate ordinals | lost acked |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['messages_per_s']:.0f} | {r['compactions_per_s']:.2f} | "
            f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['retried_turns']} | "
            f"{r['violations']} | {r['dup_ordinals']} | {r['lost']} |"
        )
    bad = [r for r in rows if r["violations"] or r["dup_ordinals"] or r["lost"]]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
