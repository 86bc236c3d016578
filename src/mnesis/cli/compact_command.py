"""``mnesis compact``: compact a session from the shell, offline with ``--model extractive``.

Runs the session's compaction protocol (prune old tool outputs, summarise the oldest
messages into leaf summaries, condense summaries) round after round, until the context
is under ``--until-under`` tokens (default: the session's own compaction target) or
nothing more can be compacted. Every summary keeps its lineage: ``mnesis expand``
reads back what it covers.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from mnesis.cli._common import (
    MAX_COUNT,
    DbOption,
    JsonOption,
    echo_json,
    format_tokens,
    stdout_console,
)
from mnesis.cli._store import progress_bar, run_writable
from mnesis.compaction.engine import CompactionEngine
from mnesis.config import MnesisConfig
from mnesis.errors import MnesisError
from mnesis.events.bus import EventBus
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["compact_command"]

_MAX_RUNS = 10_000


def compact_command(
    session_id: Annotated[str, typer.Argument(metavar="SESSION_ID", help="A session ID.")],
    db: DbOption = None,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="`extractive` (offline, no API key) or a model such as "
            "anthropic/claude-haiku-4-5 (its provider's key must be set).",
        ),
    ] = "extractive",
    until_under: Annotated[
        int | None,
        typer.Option(
            "--until-under",
            min=1,
            max=MAX_COUNT,
            metavar="TOKENS",
            help="Keep compacting until the context holds fewer tokens than this.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Compact a session now: summaries replace old messages in its context (nothing is
    deleted; grep and expand still reach every message)."""

    async def body(store: ImmutableStore, config: MnesisConfig) -> dict[str, Any]:
        record = await store.get_session(session_id)
        if record.config:
            config = MnesisConfig(**{**record.config, "store": config.store})
        config.compaction.compaction_model = model
        engine = CompactionEngine(
            store,
            SummaryDAGStore(store),
            TokenEstimator(exact=False),
            EventBus(),
            config,
            session_model=record.model,
        )
        before = await store.context_token_total(session_id)
        totals: dict[str, Any] = {"rounds": 0, "messages": 0, "pruned_tool_outputs": 0, "runs": 0}
        goal = until_under if until_under is not None else 0
        with progress_bar("compacting", float(before)) as advance:
            for _ in range(_MAX_RUNS):
                result = await engine.run_compaction(session_id, force=True)
                if result.error:
                    raise MnesisError(f"compaction failed: {result.error}")
                totals["runs"] += 1
                totals["rounds"] += result.rounds
                totals["messages"] += result.compacted_message_count
                totals["pruned_tool_outputs"] += result.pruned_tool_outputs
                totals["stop_reason"] = result.stop_reason
                totals["stop_detail"] = result.stop_detail
                advance(float(before - result.tokens_after))
                progressed = result.rounds or result.pruned_tool_outputs
                if until_under is None or result.tokens_after < goal or not progressed:
                    break
        after = await store.context_token_total(session_id)
        return {"session_id": session_id, "tokens_before": before, "tokens_after": after, **totals}

    summary, _ = run_writable(db, body)
    if as_json:
        echo_json(summary)
        return
    console = stdout_console()
    console.print(
        f"Compacted {escape(session_id)}: context {format_tokens(summary['tokens_before'])} → "
        f"{format_tokens(summary['tokens_after'])} tokens "
        f"({summary['rounds']} compaction rounds, {summary['messages']:,} messages summarised, "
        f"{summary['pruned_tool_outputs']:,} tool outputs pruned)."
    )
    console.print(f"Stopped: {summary['stop_reason']} ({escape(str(summary['stop_detail']))}).")
    if until_under is not None and summary["tokens_after"] >= until_under:
        console.print(
            f"[yellow]Could not get under {format_tokens(until_under)} tokens: the newest "
            "messages are kept raw (fresh tail).[/]"
        )
