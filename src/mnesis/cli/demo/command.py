"""``mnesis demo``: a long coding-agent session on the embedded store, offline.

The demo drives the public session API only (``MnesisSession.create``, ``send``,
``record``, ``build_context``, events) with the deterministic fake model and the
extractive summariser, in a 32k window so that compaction happens every few turns. The
session is the ``payments_migration`` story of :mod:`mnesis.testing`.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from mnesis.cli._common import check_mnesis_database, cli_errors, stdout_console
from mnesis.cli.demo._config import DEFAULT_DEMO_DB, DEMO_MODEL, DEMO_OVERRIDES
from mnesis.cli.demo._live import LiveStats
from mnesis.cli.demo._report import DemoReport, render_report, timing_line
from mnesis.cli.demo._run import run_demo_sync
from mnesis.models.message import CompactionResult

__all__ = ["demo_command"]


def _describe_run(turn: int, result: CompactionResult) -> str:
    """One log line per compaction run, printed above the progress bar."""
    what = []
    if result.compacted_message_count:
        what.append(f"summarised {result.compacted_message_count} msgs")
    if result.condensed_count:
        what.append(f"condensed {result.condensed_count}")
    if result.pruned_tool_outputs:
        what.append(f"pruned {result.pruned_tool_outputs} outputs")
    tokens = f"{result.tokens_before:,} → {result.tokens_after:,}"
    return f"  turn {turn:>4}  {tokens}  " + " · ".join(what)


def _run_with_progress(console: Console, db: str, turns: int, seed: int) -> DemoReport:
    console.print(
        Panel.fit(
            f"[bold]mnesis demo[/]: a {turns}-turn coding-agent session "
            "(migrating a payments service to async)\n"
            f"store [cyan]{escape(os.path.abspath(db))}[/] · model [cyan]{DEMO_MODEL}[/] "
            "(deterministic fake, no network) · summaries: extractive\n"
            f"window {DEMO_OVERRIDES['context_limit']:,} tokens · seed {seed}",
            border_style="blue",
        )
    )
    with Progress(
        SpinnerColumn(),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        TextColumn(
            "turns · [magenta]{task.fields[compactions]}[/] compactions · "
            "[magenta]{task.fields[prunes]}[/] prunes · context [cyan]{task.fields[context]}[/]"
        ),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("demo", total=turns, compactions=0, prunes=0, context=0)
        seen = 0

        def on_turn(live: LiveStats) -> None:
            nonlocal seen
            for turn, result in live.runs[seen:]:
                progress.console.print(_describe_run(turn, result), highlight=False)
            seen = len(live.runs)
            progress.update(
                task,
                advance=1,
                compactions=live.compactions,
                prunes=live.prunes,
                context=f"{live.context_tokens:,}",
            )

        return run_demo_sync(db, turns, seed, on_turn)


def demo_command(
    db: Annotated[
        str,
        typer.Option(
            "--db",
            metavar="PATH",
            help="SQLite file for the demo session (created if missing; an existing mnesis "
            "database gets one more session).",
        ),
    ] = DEFAULT_DEMO_DB,
    turns: Annotated[
        int, typer.Option("--turns", min=1, max=100_000, help="Number of turns to run.")
    ] = 300,
    seed: Annotated[
        int, typer.Option("--seed", help="Scenario seed: the same seed gives the same session.")
    ] = 0,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the final tables.")
    ] = False,
) -> None:
    """Run a long coding-agent session offline and show what mnesis kept and compacted.

    The same seed gives the same session: with --quiet, two runs print the same bytes (on a
    file that already holds demo sessions, all but the IDs and the file's size).

    Writes to ./mnesis-demo.db in the current directory unless --db is given. Uses the
    deterministic fake model (model fake/demo): no API key, no network.
    """
    console = stdout_console()
    with cli_errors(db):
        check_mnesis_database(db, must_exist=False)
        if quiet:
            report = run_demo_sync(db, turns, seed)
        else:
            report = _run_with_progress(console, db, turns, seed)
    render_report(console, report)
    if not quiet:
        console.print(timing_line(report), style="dim", highlight=False)
        console.print(
            f"\nInspect it: [bold]mnesis show {report.session_id} --db {escape(db)}[/] · "
            f"[bold]mnesis context {report.session_id} --db {escape(db)}[/]",
            highlight=False,
            soft_wrap=True,
        )
