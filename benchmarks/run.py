"""Run the mnesis benchmarks and print their tables.

Usage::

    python -m benchmarks.run                 # everything (~3-5 minutes)
    python -m benchmarks.run --quick         # smaller sizes (~25 seconds)
    python -m benchmarks.run --only context  # one benchmark (repeatable)
    python -m benchmarks.run --markdown out.md

Benchmarks: ``record``, ``context``, ``compaction``, ``prefix``, ``tokens``, ``postgres``
(PostgreSQL next to SQLite and next to raw psycopg, on a throwaway cluster unless
``MNESIS_BENCH_PG_DSN`` names a server), and the
standalone scripts ``retrieval``, ``summariser``, ``operators``, ``files`` and ``storage`` (run as
subprocesses, their tables printed as they come).
``tokens`` runs ``benchmarks/token_calibration.py`` with the interpreter of a
separate venv that has ``bpe-openai`` (``--calib-python``, default
``/tmp/calib-venv/bin/python``); it is skipped with a note when that is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.bench_compaction import bench_compaction, bench_prefix
from benchmarks.bench_postgres import bench_postgres
from benchmarks.bench_session import Report, SessionCache, bench_context, bench_record
from mnesis.tokens.estimator import TokenEstimator

NAMES = (
    "record",
    "context",
    "compaction",
    "prefix",
    "tokens",
    "retrieval",
    "operators",
    "files",
    "summariser",
    "postgres",
    "retention",
    "recall",
    "storage",
)
_SCRIPTS = {
    "retrieval": "benchmarks.bench_retrieval",
    "summariser": "benchmarks.bench_summariser",
    "operators": "benchmarks.bench_operators",
    "files": "benchmarks.bench_files",
    "retention": "benchmarks.bench_retention",
    "recall": "benchmarks.bench_recall",
    "storage": "benchmarks.bench_storage",
}
_DEFAULT_CALIB_PYTHON = "/tmp/calib-venv/bin/python"
_ROOT = Path(__file__).resolve().parent.parent


def machine_info() -> dict[str, str]:
    """Date, kernel, CPU model and count, Python version, token estimator mode."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or "unknown"
    exact = TokenEstimator().is_exact
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%a %b %d %H:%M:%S UTC %Y"),
        "uname": _uname(),
        "cpu": f"{cpu} x {os.cpu_count()}",
        "python": sys.version.split()[0],
        "sqlite": __import__("sqlite3").sqlite_version,
        "token estimator": "exact (offline BPE)" if exact else "heuristic (no offline encoding)",
        "mnesis revision": _revision(),
        "load average at start": _loadavg(),
    }


def _revision() -> str:
    """Commit of the checkout, marked dirty when ``src/`` has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"],
            cwd=_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} + uncommitted changes in src/" if dirty else head


def _uname() -> str:
    try:
        return subprocess.run(
            ["uname", "-a"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return " ".join(platform.uname()).strip()


def _loadavg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def make_console() -> Console:
    # Wide tables stay readable when the output is piped to a file.
    return Console(width=None if sys.stdout.isatty() else 220)


def print_report(console: Console, report: Report) -> None:
    """One report as a rich table with its notes under it."""
    table = Table(title=report.title, title_justify="left", show_lines=False)
    for index, column in enumerate(report.columns):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in report.rows:
        table.add_row(*row)
    console.print(table)
    for note in report.notes:
        console.print(f"  [dim]{note}[/dim]")
    console.print()


def to_markdown(reports: list[Report], info: dict[str, str], command: str) -> str:
    """The reports as Markdown tables, headed by the machine and the command."""
    lines = [f"- {key}: `{value}`" for key, value in info.items()]
    lines += [f"- command: `{command}`", ""]
    for report in reports:
        lines.append(f"### {report.title}")
        lines.append("")
        lines.append(_md_row(report.columns))
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(report.columns) - 1)) + "|")
        lines.extend(_md_row(row) for row in report.rows)
        lines.append("")
        lines.extend(f"{note}" for note in report.notes)
        lines.append("")
    return "\n".join(lines)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def run_token_calibration(python: str, quick: bool) -> list[Report]:
    """Run the calibration in its own venv; it prints Markdown-free JSON reports."""
    if not os.path.exists(python):
        report = Report("5. Token heuristic vs cl100k_base", ["status"])
        report.rows.append([f"skipped: {python} not found"])
        report.notes.append(
            "Set up: python3 -m venv /tmp/calib-venv && /tmp/calib-venv/bin/pip install "
            "-e . bpe-openai numpy"
        )
        return [report]
    args = [python, "-m", "benchmarks.token_calibration", "--json"]
    if quick:
        args.append("--quick")
    done = subprocess.run(args, cwd=_ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        report = Report("5. Token heuristic vs cl100k_base", ["status"])
        report.rows.append([f"failed (exit {done.returncode})"])
        report.notes.append(done.stderr.strip()[-2000:])
        return [report]
    import json

    return [Report(**data) for data in json.loads(done.stdout)]


async def run(names: list[str], quick: bool, calib_python: str) -> list[Report]:
    """Run the selected benchmarks in order; returns their reports."""
    console = make_console()
    reports: list[Report] = []
    with tempfile.TemporaryDirectory(prefix="mnesis-bench-") as workdir:
        cache = SessionCache(workdir)
        steps: dict[str, Callable[[], Awaitable[list[Report]]]] = {
            "record": lambda: _one(bench_record(workdir, quick=quick)),
            "context": lambda: _one(bench_context(cache, quick=quick)),
            "compaction": lambda: bench_compaction(cache, workdir, quick=quick),
            "prefix": lambda: _one(bench_prefix(workdir, quick=quick)),
            "tokens": lambda: asyncio.to_thread(run_token_calibration, calib_python, quick),
            "postgres": lambda: bench_postgres(cache, workdir, quick=quick),
        }
        for script_name, module in _SCRIPTS.items():
            steps[script_name] = _script_step(module, quick)
        for name in names:
            started = time.perf_counter()
            console.print(f"[dim]running {name} ...[/dim]")
            for report in await steps[name]():
                print_report(console, report)
                reports.append(report)
            console.print(f"[dim]{name} took {time.perf_counter() - started:.1f}s[/dim]\n")
    return reports


def _script_step(module: str, quick: bool) -> Callable[[], Awaitable[list[Report]]]:
    async def step() -> list[Report]:
        args = [sys.executable, "-m", module, *(["--quick"] if quick else [])]
        done = await asyncio.to_thread(
            subprocess.run, args, cwd=_ROOT, capture_output=True, text=True, check=False
        )
        print(done.stdout)
        if done.returncode != 0:
            print(done.stderr[-2000:])
        return []

    return step


async def _one(coro: Awaitable[Report]) -> list[Report]:
    return [await coro]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.run``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (< 1 minute)")
    parser.add_argument("--only", action="append", choices=NAMES, help="run only this one")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    parser.add_argument("--calib-python", default=_DEFAULT_CALIB_PYTHON, metavar="PYTHON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    names = [n for n in NAMES if n in args.only] if args.only else list(NAMES)
    console = make_console()
    info = machine_info()
    command = "python -m benchmarks.run " + shlex.join(sys.argv[1:] if argv is None else argv)
    for key, value in info.items():
        console.print(f"[bold]{key}[/bold]: {value}")
    console.print()
    started = time.perf_counter()
    reports = asyncio.run(run(names, args.quick, args.calib_python))
    info["load average at end"] = _loadavg()
    info["wall time"] = f"{time.perf_counter() - started:.0f}s"
    console.print(
        f"[bold]total {info['wall time']}, load average at end {info['load average at end']}[/bold]"
    )
    if args.markdown:
        Path(args.markdown).write_text(to_markdown(reports, info, command.strip()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
