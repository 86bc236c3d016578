"""``mnesis demo``: a long coding-agent session on the embedded store, offline.

The demo drives the public session API only (``MnesisSession.create``, ``send``,
``record``, ``build_context``, events) with the deterministic fake model and the
extractive summariser, in a 32k window so that compaction happens every few turns.

Determinism: the conversation comes from ``--seed``, and the demo waits for each
background compaction before the next turn, so compactions happen at the same turns on
every run, up to one caveat: summaries quote IDs, which are random, so their token
estimates differ by a few tokens between runs and can, now and then, move a compaction
by one turn.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

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
from mnesis.cli._report import DemoReport, collect_report, render_report
from mnesis.cli._scenario import scenario
from mnesis.config import CompactionConfig, MnesisConfig, StoreConfig
from mnesis.events.bus import MnesisEvent
from mnesis.models.message import CompactionResult
from mnesis.session import MnesisSession
from mnesis.store.pool import StorePool

__all__ = [
    "DEFAULT_DEMO_DB",
    "DEMO_MODEL",
    "DEMO_OVERRIDES",
    "demo_command",
    "demo_config",
    "run_demo",
]

DEMO_MODEL = "fake/demo"
"""The model string of demo sessions: the built-in fake, no key and no network."""
DEFAULT_DEMO_DB = "mnesis-demo.db"
DEMO_OVERRIDES = {"context_limit": 32_000, "max_output_tokens": 2_000}
"""The demo's window: small, so that compaction happens every few turns."""
SYSTEM_PROMPT = (
    "You are a senior Python engineer working in the acme/payments repository. Use the "
    "bash, read_file, grep and edit tools; keep changes small and run the tests after each."
)


def demo_config(db_path: str = DEFAULT_DEMO_DB) -> MnesisConfig:
    """The configuration of demo sessions: a 32k window and offline extractive summaries.

    The window is small so that a few hundred turns go through many compactions; the
    pruning thresholds are the defaults scaled by the same ratio (32k / 200k).
    """
    return MnesisConfig(
        store=StoreConfig(db_path=db_path),
        model_overrides=dict(DEMO_OVERRIDES),
        compaction=CompactionConfig(
            compaction_model="extractive",
            compaction_output_budget=4_000,
            prune_protect_tokens=6_000,
            prune_minimum_tokens=3_000,
        ),
    )


@dataclass
class LiveStats:
    """Counters the event handlers keep while the demo runs."""

    turn: int = 0
    context_tokens: int = 0
    compactions: int = 0
    prunes: int = 0
    pruned_outputs: int = 0
    pruned_tokens: int = 0
    failures: int = 0
    runs: list[tuple[int, CompactionResult]] = field(default_factory=list)

    def on_compaction(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        """``COMPACTION_COMPLETED`` handler: keep runs that changed the context, and count
        the ones that committed a summary."""
        result = CompactionResult.model_validate(payload["result"])
        if result.level_used or result.pruned_tool_outputs:
            self.runs.append((self.turn, result))
        if result.level_used:
            self.compactions += 1

    def on_prune(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        """``PRUNE_COMPLETED`` handler."""
        self.prunes += 1
        self.pruned_outputs += int(payload.get("pruned_count", 0))
        self.pruned_tokens += int(payload.get("pruned_tokens", 0))

    def on_failure(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        """``COMPACTION_FAILED`` handler."""
        self.failures += 1


async def run_demo(
    db_path: str,
    *,
    turns: int,
    seed: int,
    on_turn: Callable[[LiveStats], None] | None = None,
) -> DemoReport:
    """Run the demo session on ``db_path`` and return what the final tables show."""
    started = time.perf_counter()
    live = LiveStats()
    pool = StorePool()
    try:
        session = await MnesisSession.create(
            model=DEMO_MODEL, config=demo_config(db_path), pool=pool, system_prompt=SYSTEM_PROMPT
        )
        session.subscribe(MnesisEvent.COMPACTION_COMPLETED, live.on_compaction)
        session.subscribe(MnesisEvent.PRUNE_COMPLETED, live.on_prune)
        session.subscribe(MnesisEvent.COMPACTION_FAILED, live.on_failure)
        try:
            for index, turn in enumerate(scenario(turns, seed)):
                live.turn = index + 1
                if turn.assistant is None:
                    await session.send(turn.user)
                else:
                    await session.record(turn.user, turn.assistant)
                # Compaction runs in the background after a turn; waiting here makes it
                # land at the same turn on every run, so a seed reproduces the session.
                await session.compaction_engine.wait_for_pending()
                live.context_tokens = await session.store.context_token_total(session.id)
                if on_turn is not None:
                    on_turn(live)
            report = await collect_report(session, live, turns=turns, seed=seed)
        finally:
            await session.close()
    finally:
        await pool.close_all()
    report.elapsed_s = time.perf_counter() - started
    return report


def _run(
    db_path: str, turns: int, seed: int, on_turn: Callable[[LiveStats], None] | None = None
) -> DemoReport:
    report = asyncio.run(run_demo(db_path, turns=turns, seed=seed, on_turn=on_turn))
    report.db_bytes = sum(
        os.path.getsize(p) for p in (db_path, db_path + "-wal") if os.path.exists(p)
    )
    return report


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

        return _run(db, turns, seed, on_turn)


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

    Writes to ./mnesis-demo.db in the current directory unless --db is given. Uses the
    deterministic fake model (model fake/demo): no API key, no network.
    """
    console = stdout_console()
    with cli_errors(db):
        check_mnesis_database(db, must_exist=False)
        report = _run(db, turns, seed) if quiet else _run_with_progress(console, db, turns, seed)
    render_report(console, report)
    if not quiet:
        console.print(
            f"\nInspect it: [bold]mnesis show {report.session_id} --db {escape(db)}[/] · "
            f"[bold]mnesis context {report.session_id} --db {escape(db)}[/]",
            highlight=False,
            soft_wrap=True,
        )
