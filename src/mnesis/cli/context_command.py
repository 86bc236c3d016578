"""``mnesis context``: the context the next turn of a session would send, built read-only.

Summaries are annotated with their kind, depth and level, and the token breakdown is
set against the model's budget. The database is opened read-only (see
:mod:`mnesis.cli._store`).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from mnesis.cli._common import (
    DbOption,
    JsonOption,
    SessionArg,
    abbreviate,
    count_option,
    echo_json,
    format_tokens,
    stdout_console,
)
from mnesis.cli._store import run_read_only
from mnesis.cli.demo import DEMO_MODEL, demo_config
from mnesis.config import MnesisConfig
from mnesis.context.builder import BuiltContext, ContextBuilder
from mnesis.models.model_info import ModelInfo
from mnesis.store.base import ContextItem, SessionRecord, SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["context_command"]


async def _build_context(
    store: ImmutableStore, config: MnesisConfig, session_id: str, window: dict[str, int]
) -> tuple[SessionRecord, BuiltContext, list[ContextItem], dict[str, SummaryRecord]]:
    record = await store.get_session(session_id)
    if record.config:
        # The configuration the session was created with (its window and thresholds).
        config = MnesisConfig(**{**record.config, "store": config.store})
    elif record.model == DEMO_MODEL:
        config = demo_config(config.store.db_path)
    if window:
        config.model_overrides = {**(config.model_overrides or {}), **window}
    # Built straight from the store (no session is opened), so inspecting never writes.
    model = ModelInfo.from_model_string(record.model, config.model_overrides)
    builder = ContextBuilder(store, token_estimator=TokenEstimator(model.encoding))
    built = await builder.build(record.id, model, record.system_prompt, config)
    items = await store.get_context_items(session_id)
    summary_ids = [i.item_id for i in items if i.item_type == "summary"]
    summaries = {s.id: s for s in await store.get_summaries(summary_ids)}
    return record, built, items, summaries


def _context_json(
    record: SessionRecord,
    built: BuiltContext,
    items: list[ContextItem],
    summaries: dict[str, SummaryRecord],
) -> dict[str, Any]:
    tokens = {i.item_id: i for i in items}
    entries = []
    for item_id, message in zip(built.item_ids, built.messages, strict=False):
        item = tokens.get(item_id)
        entry: dict[str, Any] = {
            "type": item.item_type if item else "message",
            "id": item_id,
            "role": message.role,
            "tokens": item.tokens if item else None,
            "content": message.content,
        }
        summary = summaries.get(item_id)
        if summary is not None:
            entry |= {
                "kind": summary.kind,
                "depth": summary.depth,
                "level": summary.level,
                "covers_messages": summary.source_message_count,
            }
        entries.append(entry)
    return {
        "session_id": record.id,
        "model": record.model,
        "system_prompt": built.system_prompt,
        "token_estimate": built.token_estimate,
        "budget": {
            "context_limit": built.budget.context_limit,
            "reserved_output_tokens": built.budget.reserved_output_tokens,
            "compaction_buffer": built.budget.compaction_buffer,
            "usable": built.budget.usable,
        },
        "breakdown": {
            "system_prompt": built.system_prompt_tokens,
            "summaries": built.summary_token_count,
            "messages": built.raw_message_tokens,
            "tool_outputs": built.tool_output_tokens,
        },
        "dropped_summary_ids": built.dropped_summary_ids,
        "items": entries,
    }


def context_command(
    session_id: SessionArg,
    db: DbOption = None,
    context_limit: Annotated[
        int | None, count_option("--context-limit", "Model window to budget for (tokens).")
    ] = None,
    max_output_tokens: Annotated[
        int | None,
        count_option("--max-output-tokens", "Output tokens to reserve.", minimum=0),
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Print every item in full instead of a preview.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Show the context the next turn of a session would send: summaries annotated, and
    where the tokens go against the budget.

    The window is the model's (sessions made by `mnesis demo` get the demo's 32k window);
    --context-limit and --max-output-tokens override it.
    """
    window = {
        k: v
        for k, v in (("context_limit", context_limit), ("max_output_tokens", max_output_tokens))
        if v is not None
    }
    (record, built, items, summaries), _ = run_read_only(
        db, lambda store, config: _build_context(store, config, session_id, window)
    )
    if as_json:
        echo_json(_context_json(record, built, items, summaries))
        return
    _print_context(record, built, items, summaries, full=full)


def _cut(text: str, width: int) -> str:
    return text if width == 0 else abbreviate(text, width)


def _head(text: str, lines: int, width: int) -> str:
    kept = [abbreviate(line, width) for line in text.splitlines() if line.strip()]
    more = len(kept) - lines
    return "\n".join(kept[:lines]) + (f"\n… ({more} more lines)" if more > 0 else "")


def _annotation(summary: SummaryRecord) -> str:
    return (
        f"{summary.kind} summary {summary.id} · depth {summary.depth} · level {summary.level}"
        f" · covers {summary.source_message_count:,} messages"
    )


def _print_context(
    record: SessionRecord,
    built: BuiltContext,
    items: list[ContextItem],
    summaries: dict[str, SummaryRecord],
    *,
    full: bool,
) -> None:
    console = stdout_console()
    by_id = {i.item_id: i for i in items}
    table = Table(
        title=f"Next context of {record.id} ({escape(record.model)})", title_justify="left"
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("item", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("content", overflow="fold")
    table.add_row(
        "",
        "[dim]system[/]",
        format_tokens(built.system_prompt_tokens),
        escape(_cut(built.system_prompt, 0 if full else 100)),
    )
    for index, (item_id, message) in enumerate(
        zip(built.item_ids, built.messages, strict=False), 1
    ):
        item = by_id.get(item_id)
        tokens = format_tokens(item.tokens) if item else "?"
        text = message.content if isinstance(message.content, str) else str(message.content)
        summary = summaries.get(item_id)
        width = 0 if full else 160
        if summary is not None:
            body = text if full else _head(summary.content, 4, 100)
            table.add_row(
                str(index),
                "[magenta]summary[/]",
                tokens,
                f"[magenta]{escape(_annotation(summary))}[/]\n{escape(body)}",
            )
        else:
            table.add_row(str(index), message.role, tokens, escape(_cut(text, width)))
    console.print(table)
    b = built.budget
    share = built.token_estimate / b.usable if b.usable else 0.0
    totals = Table(title="Token breakdown", title_justify="left", show_header=False)
    totals.add_column("what", style="dim")
    totals.add_column("tokens", justify="right")
    totals.add_row("system prompt", format_tokens(built.system_prompt_tokens))
    n_summaries = sum(1 for i in built.item_ids if i in summaries)
    totals.add_row(f"summaries ({n_summaries})", format_tokens(built.summary_token_count))
    totals.add_row(
        f"messages ({len(built.item_ids) - n_summaries})", format_tokens(built.raw_message_tokens)
    )
    totals.add_row("  of which tool calls", format_tokens(built.tool_output_tokens))
    totals.add_row("[bold]total[/]", f"[bold]{format_tokens(built.token_estimate)}[/]")
    totals.add_row("usable budget", f"{format_tokens(b.usable)} ({share:.0%} used)")
    totals.add_row(
        "window",
        f"{format_tokens(b.context_limit)} − {format_tokens(b.reserved_output_tokens)} output "
        f"− {format_tokens(b.compaction_buffer)} buffer",
    )
    if built.dropped_summary_ids:
        totals.add_row("dropped summaries", ", ".join(built.dropped_summary_ids))
    console.print(totals)
