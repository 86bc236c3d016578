"""Large-file benchmark: exploration throughput and peak memory on generated files.

Generates a CSV (1 GB; ``--quick``: 100 MB) and a JSON document (50 MB; ``--quick``:
10 MB) in a temporary directory, then measures each in a fresh child process, so
every peak RSS is that of one measurement alone:

* ``explore``: the structural explorer by itself (what ``describe`` later shows);
* ``handle_file``: the whole first call on new content (sha256 of every byte, the
  sampled token estimate, type detection, exploration, the ``file_references`` row);
* ``cache hit``: the same call again on a second handler: sha256 plus one lookup.

Throughput is the file size divided by the wall time. "RSS growth" is the peak
resident set of the measurement minus the peak before it started (after imports
and a warm-up call), so it is what the file itself cost.

Run: ``python benchmarks/bench_files.py [--quick] [--dir DIR] [--keep]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MB = 1024 * 1024


# -- generating the inputs --------------------------------------------------------
def write_csv(path: Path, size: int) -> None:
    """About ``size`` bytes of a 6-column CSV, some fields quoted, in 4 MB blocks."""
    rows = [
        f'{i},user{i}@example.com,"Smith, {i % 97}",{i * 0.25:.2f},2024-01-{i % 28 + 1:02d},'
        f"{'true' if i % 3 else 'false'}\n"
        for i in range(60_000)
    ]
    block = "".join(rows).encode()
    with open(path, "wb") as handle:
        handle.write(b"id,email,name,amount,day,active\n")
        while handle.tell() < size:
            handle.write(block)


def write_json(path: Path, size: int) -> None:
    """About ``size`` bytes: ``{"meta": {...}, "records": [ {...}, ... ]}``."""
    records = [
        json.dumps(
            {
                "id": i,
                "user": {"name": f"user {i}", "email": f"u{i}@example.com"},
                "items": [{"sku": f"S{i % 50}", "qty": i % 7}] * (i % 3),
                "note": "lorem ipsum dolor sit amet" if i % 2 else None,
            }
        )
        for i in range(10_000)
    ]
    block = ",".join(records).encode()
    with open(path, "wb") as handle:
        handle.write(b'{"meta": {"generated": "bench", "version": 1}, "records": [')
        handle.write(block)
        while handle.tell() < size:
            handle.write(b"," + block)
        handle.write(b"]}")


# -- one measurement, in a child process --------------------------------------------
def _max_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / MB


async def _handle(path: str, db: str, warmup: str, repeat: bool) -> dict[str, Any]:
    from mnesis import FileConfig, TokenEstimator
    from mnesis.files import LargeFileHandler
    from mnesis.store import StorePool

    pool = StorePool()
    try:
        store = await pool.acquire(db_path=db)
        estimator = TokenEstimator()
        await LargeFileHandler(store, estimator, FileConfig()).handle_file(warmup)
        if repeat:  # measure the second call: the content is known
            await LargeFileHandler(store, estimator, FileConfig()).handle_file(path)
        handler = LargeFileHandler(store, estimator, FileConfig())
        before = _max_rss_mb()
        start = time.perf_counter()
        result = await handler.handle_file(path)
        seconds = time.perf_counter() - start
        ref = result.file_ref
        assert ref is not None and result.cache_hit is repeat
        return {
            "seconds": seconds,
            "before": before,
            "peak": _max_rss_mb(),
            "tokens": ref.token_count,
            "summary": ref.exploration_summary,
        }
    finally:
        await pool.close_all()


def _explore(path: str, file_type: str) -> dict[str, Any]:
    from mnesis.files import explore

    with tempfile.TemporaryDirectory() as tmp:  # warm up: imports, first allocations
        tiny = Path(tmp) / f"tiny.{file_type}"
        tiny.write_text('{"a": [1]}' if file_type == "json" else "a,b\n1,2\n")
        explore(tiny, file_type)
    before = _max_rss_mb()
    start = time.perf_counter()
    summary = explore(path, file_type)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "before": before, "peak": _max_rss_mb(), "summary": summary}


def child_main(argv: list[str]) -> int:
    """``--child explore PATH TYPE`` or ``--child handle|hit PATH DB WARMUP``: print JSON."""
    mode, path, *rest = argv
    if mode == "explore":
        report = _explore(path, rest[0])
    else:
        report = asyncio.run(_handle(path, rest[0], rest[1], repeat=mode == "hit"))
    print(json.dumps(report))
    return 0


def measure(mode: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"benchmark child failed ({mode} {args}):\n{done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


# -- the runner ---------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="100 MB CSV and 10 MB JSON")
    parser.add_argument("--dir", help="where to write the generated files (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child)

    csv_size, json_size = (100 * MB, 10 * MB) if args.quick else (1024 * MB, 50 * MB)
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="mnesis-bench-files-"))
    workdir.mkdir(parents=True, exist_ok=True)
    inputs = [("csv", workdir / "bench.csv", csv_size), ("json", workdir / "bench.json", json_size)]
    warmup = workdir / "warmup.csv"
    warmup.write_text("id,name\n" + "1,abcdefgh\n" * 20_000)
    rows: list[list[str]] = []
    summaries: list[tuple[str, str]] = []
    try:
        for file_type, path, size in inputs:
            start = time.perf_counter()
            (write_csv if file_type == "csv" else write_json)(path, size)
            actual = path.stat().st_size
            print(
                f"generated {path.name}: {actual / MB:,.0f} MB in "
                f"{time.perf_counter() - start:.1f} s",
                file=sys.stderr,
            )
            db = str(workdir / f"{file_type}.db")
            for label, report in (
                ("explore", measure("explore", str(path), file_type)),
                ("handle_file", measure("handle", str(path), db + ".new", str(warmup))),
                ("cache hit", measure("hit", str(path), db + ".hit", str(warmup))),
            ):
                seconds = report["seconds"]
                rows.append(
                    [
                        path.name,
                        f"{actual / MB:,.0f}",
                        label,
                        f"{seconds:.2f}",
                        f"{actual / MB / seconds:,.0f}",
                        f"{report['peak']:,.0f}",
                        f"{max(0.0, report['peak'] - report['before']):,.1f}",
                    ]
                )
                if label == "explore":
                    summaries.append((path.name, report["summary"]))
    finally:
        if not args.keep:
            for _, path, _ in inputs:
                path.unlink(missing_ok=True)
            for leftover in workdir.glob("*.db*"):
                leftover.unlink()
            warmup.unlink(missing_ok=True)
            if not args.dir:
                os.rmdir(workdir)

    columns = ["file", "MB", "measure", "seconds", "MB/s", "peak RSS MB", "RSS growth MB"]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    line = "  ".join(
        c.ljust(w) if i < 3 else c.rjust(w)
        for i, (c, w) in enumerate(zip(columns, widths, strict=True))
    )
    print(f"\nLarge files ({'quick' if args.quick else 'full'}; python {sys.version.split()[0]})")
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(
            "  ".join(
                v.ljust(w) if i < 3 else v.rjust(w)
                for i, (v, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    print(
        "\nJSON above 20 MB is scanned up to its first 20 MB (the summary says so and marks"
        "\nits counts as lower bounds); MB/s is still the whole file size over the time."
    )
    for name, summary in summaries:
        print(f"\nSummary of {name}:\n{summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
