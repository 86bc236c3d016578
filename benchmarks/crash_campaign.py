"""The full crash campaign: writers killed with SIGKILL at random moments.

Usage::

    python -m benchmarks.crash_campaign              # 100 trials, two at a time
    python -m benchmarks.crash_campaign --trials 20  # fewer
    python -m benchmarks.crash_campaign --keep DIR   # keep the trial databases and logs

Each trial copies a session sitting just over the soft compaction threshold of a
32k window and starts ``benchmarks/crash_child.py``: a random mix of
``record``, ``send``, ``stream`` and ``compact`` against a fake model with small
delays (background compaction on), each acknowledged call fsynced to a side log.
The child is killed with SIGKILL a random time after it is ready. Then the store
must open, pass ``PRAGMA integrity_check`` / ``foreign_key_check``, report zero
violations (token estimates included), hold every acknowledged turn and compaction,
and the session must load, record and compact again.

``tests/integrity/test_crash_campaign.py`` runs ten of these trials in the test
suite; this is the same campaign at full size. Prints one row per kill phase and
the totals; exits 1 if any trial lost anything or left a violation.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console
from rich.table import Table

from benchmarks.crash_trials import (
    TrialOutcome,
    build_campaign_template,
    run_trial,
    verify_trial,
)

__all__ = ["main", "run_campaign"]


def run_campaign(
    trials: int, *, workers: int, max_delay: float, directory: str
) -> list[TrialOutcome]:
    """Run ``trials`` trials, ``workers`` children at a time, and verify each."""
    template = asyncio.run(build_campaign_template(f"{directory}/template.db"))
    outcomes: list[TrialOutcome] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(run_trial, t, template, directory, max_delay=max_delay)
            for t in range(trials)
        ]
        for future in futures:
            outcomes.append(asyncio.run(verify_trial(future.result())))
    return outcomes


def _table(outcomes: list[TrialOutcome], seconds: float) -> tuple[Table, Table]:
    by_phase: dict[str, list[TrialOutcome]] = defaultdict(list)
    for o in outcomes:
        by_phase[o.trial.phase].append(o)
    phases = Table(title="Crash campaign: trials by what the writer was doing when killed")
    phases.add_column("killed", overflow="fold")
    for column in ("trials", "violations", "token mism.", "lost turns", "lost comp."):
        phases.add_column(column, justify="right")
    for phase, group in sorted(by_phase.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        phases.add_row(*_row(phase, group))
    phases.add_section()
    phases.add_row(*_row("[bold]all[/]", outcomes))

    killed = sum(1 for o in outcomes if o.trial.returncode == -9)
    whole = sum(1 for o in outcomes if o.integrity == ["ok"] and not o.foreign_key_errors)
    totals = Table(title="Totals", title_justify="left", show_header=False)
    totals.add_column("what", style="dim")
    totals.add_column("value", justify="right")
    totals.add_row(
        "trials", f"{len(outcomes)} ({killed} killed, {len(outcomes) - killed} finished)"
    )
    totals.add_row("acknowledged turns", f"{sum(len(o.trial.acked_turns) for o in outcomes):,}")
    totals.add_row(
        "acknowledged compactions", f"{sum(len(o.trial.acked_summaries) for o in outcomes):,}"
    )
    totals.add_row("integrity_check + foreign_key_check ok", f"{whole}/{len(outcomes)}")
    totals.add_row("violations", str(sum(len(o.violations) for o in outcomes)))
    totals.add_row("token mismatches", str(sum(len(o.token_mismatches) for o in outcomes)))
    totals.add_row("lost turns", str(sum(len(o.lost_turns) for o in outcomes)))
    totals.add_row("lost compactions", str(sum(len(o.lost_summaries) for o in outcomes)))
    totals.add_row(
        "resumed (load, record, compact)", f"{sum(o.resumed for o in outcomes)}/{len(outcomes)}"
    )
    totals.add_row("trials with a problem", str(sum(1 for o in outcomes if not o.ok)))
    totals.add_row("time", f"{seconds:.1f} s")
    return phases, totals


def _row(label: str, group: list[TrialOutcome]) -> list[str]:
    return [
        label,
        str(len(group)),
        str(sum(len(o.violations) for o in group)),
        str(sum(len(o.token_mismatches) for o in group)),
        str(sum(len(o.lost_turns) for o in group)),
        str(sum(len(o.lost_summaries) for o in group)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100, help="number of trials (100)")
    parser.add_argument("--workers", type=int, default=2, help="children at a time (2)")
    parser.add_argument(
        "--max-delay", type=float, default=2.5, help="latest kill, seconds after ready (2.5)"
    )
    parser.add_argument("--keep", metavar="DIR", help="keep trial databases and logs in DIR")
    args = parser.parse_args(argv)
    # Resuming a killed writer's session takes over its compaction lease, which mnesis
    # logs as a warning: expected here, once per trial.
    logging.getLogger("mnesis").setLevel(logging.ERROR)
    directory = args.keep or tempfile.mkdtemp(prefix="mnesis-crash-")
    console = Console()
    started = time.perf_counter()
    try:
        outcomes = run_campaign(
            args.trials, workers=args.workers, max_delay=args.max_delay, directory=directory
        )
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    phases, totals = _table(outcomes, time.perf_counter() - started)
    console.print(phases)
    console.print(totals)
    for o in outcomes:
        if not o.ok:
            console.print(
                f"[red]trial {o.trial.trial}[/] ({o.trial.phase}): integrity {o.integrity}, "
                f"{o.foreign_key_errors} foreign key errors, violations {o.violations[:3]}, "
                f"token mismatches {o.token_mismatches[:3]}, lost turns {o.lost_turns[:3]}, "
                f"lost compactions {o.lost_summaries[:3]}, resumed {o.resumed}"
            )
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
