"""Inspection commands: ``mnesis sessions``, ``mnesis show`` and ``mnesis context``.

They open the database read-only (see :mod:`mnesis.cli._store`): a missing file or a
SQLite file of another application is refused, and nothing on disk changes.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from mnesis.cli._common import (
    MAX_COUNT,
    DbOption,
    JsonOption,
    abbreviate,
    echo_json,
    format_time,
    format_tokens,
    stdout_console,
)
from mnesis.cli._parts import full_message_json, full_message_text_block, message_json, part_preview
from mnesis.cli._store import run_read_only
from mnesis.cli.demo import DEMO_MODEL, demo_config
from mnesis.config import MnesisConfig
from mnesis.context.builder import BuiltContext, ContextBuilder
from mnesis.errors import InvalidArgumentError
from mnesis.models.clock import now_ms
from mnesis.models.message import MessageWithParts
from mnesis.models.model_info import ModelInfo
from mnesis.store.base import ContextItem, SessionRecord, SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["context_command", "sessions_command", "show_command"]

SessionArg = Annotated[str, typer.Argument(metavar="SESSION_ID", help="A session ID (sess_...).")]


# -- sessions -----------------------------------------------------------------
async def _list_sessions(
    store: ImmutableStore, limit: int
) -> list[tuple[SessionRecord, dict[str, int]]]:
    rows = []
    for record in await store.list_sessions(limit=limit):
        snapshot = await store.integrity_snapshot(record.id)
        turns = sum(1 for m in snapshot.messages if m[2] == "user" and not m[3])
        usage = await store.session_token_usage(record.id)
        last = record.updated_at
        if snapshot.messages:
            newest = await store.get_messages(record.id, after_seq=snapshot.messages[-1][1] - 1)
            if newest:
                last = max(last, newest[-1].message.created_at)
        counts = {
            "messages": len(snapshot.messages),
            "turns": turns,
            "context_tokens": await store.context_token_total(record.id),
            "tokens_used": usage.total,
            "last_activity": last,
        }
        rows.append((record, counts))
    return rows


def sessions_command(
    db: DbOption = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", min=1, max=MAX_COUNT, help="Show at most this many sessions, newest first."
        ),
    ] = 20,
    as_json: JsonOption = False,
) -> None:
    """List the sessions of a database: ID, model, status, turns, context size and last
    activity (newest first)."""
    rows, path = run_read_only(db, lambda store, _: _list_sessions(store, limit))
    if as_json:
        echo_json(
            [
                {
                    "id": r.id,
                    "model": r.model,
                    "agent": r.agent,
                    "title": r.title,
                    "status": r.status,
                    "parent_id": r.parent_id,
                    "created_at": r.created_at,
                    "updated_at": r.updated_at,
                    **counts,
                }
                for r, counts in rows
            ]
        )
        return
    console = stdout_console()
    if not rows:
        console.print(f"No sessions in {escape(path)}.")
        return
    table = Table(
        title=f"Sessions in {escape(path)}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("id", no_wrap=True, min_width=31)
    table.add_column("model", no_wrap=True, overflow="ellipsis", max_width=10)
    table.add_column("status", no_wrap=True, min_width=6)
    table.add_column("turns", justify="right", no_wrap=True, min_width=5)
    table.add_column("context", justify="right", no_wrap=True, min_width=7)
    table.add_column("last", no_wrap=True, min_width=10)
    for r, counts in rows:
        table.add_row(
            r.id,
            r.model,
            r.status,
            f"{counts['turns']:,}",
            format_tokens(counts["context_tokens"]),
            _short_time(counts["last_activity"]),
        )
    console.print(table)


def _short_time(ms: int) -> str:
    """``HH:MM`` today, ``YYYY-MM-DD`` before: last activity in a narrow table."""
    full = format_time(ms)
    return full[11:] if full[:10] == format_time(now_ms())[:10] else full[:10]


# -- show ---------------------------------------------------------------------
async def _load_messages(
    store: ImmutableStore, session_id: str, limit: int
) -> tuple[SessionRecord, int, list[MessageWithParts]]:
    record = await store.get_session(session_id)
    total = await store.count_messages(session_id)
    after = max(0, total - limit) if limit else 0
    messages = await store.get_messages(session_id, include_summaries=True, after_seq=after)
    return record, total, messages


async def _load_one(
    store: ImmutableStore, session_id: str, message_id: str
) -> tuple[SessionRecord, MessageWithParts]:
    record = await store.get_session(session_id)
    message = await store.get_message(message_id)
    if message.message.session_id != session_id:
        raise InvalidArgumentError(f"message {message_id} belongs to {message.message.session_id}")
    return record, message


def show_command(
    session_id: SessionArg,
    db: DbOption = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", min=0, max=MAX_COUNT, help="Show the newest N messages (0: all of them)."
        ),
    ] = 50,
    full: Annotated[
        bool,
        typer.Option("--full", help="Print messages and tool input/output in full (paged)."),
    ] = False,
    message_id: Annotated[
        str | None,
        typer.Option("--message", metavar="MESSAGE_ID", help="Print this one message in full."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show the stored messages of a session: roles and abbreviated parts, or with
    --full / --message every text and tool output in full (pruned outputs included)."""
    if message_id is not None:
        (record, one), _ = run_read_only(
            db, lambda store, _: _load_one(store, session_id, message_id)
        )
        if as_json:
            echo_json(full_message_json(one))
            return
        _page([full_message_text_block(one)])
        return
    (record, total, messages), _ = run_read_only(
        db, lambda store, _: _load_messages(store, session_id, limit)
    )
    first_seq = total - len(messages) + 1
    if as_json:
        render = full_message_json if full else None
        echo_json(
            {
                "session": {"id": record.id, "model": record.model, "status": record.status},
                "total_messages": total,
                "messages": [
                    render(m) | {"seq": first_seq + i} if render else message_json(m, first_seq + i)
                    for i, m in enumerate(messages)
                ],
            }
        )
        return
    if full:
        _page([full_message_text_block(m, first_seq + i) for i, m in enumerate(messages)])
        return
    console = stdout_console()
    shown = f"last {len(messages)} of {total}" if len(messages) < total else f"all {total}"
    table = Table(
        title=f"{record.id} · {escape(record.model)} · {shown} messages", title_justify="left"
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("role", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("parts", overflow="fold")
    for index, message in enumerate(messages):
        role = "summary" if message.message.is_summary else message.role
        style = {"user": "green", "assistant": "cyan", "summary": "magenta"}.get(role, "")
        previews = [part_preview(p) for p in message.parts]
        table.add_row(
            str(first_seq + index),
            message.id,
            f"[{style}]{role}[/]" if style else role,
            format_tokens(message.message.token_estimate),
            escape("\n".join(p for p in previews if p)) or "-",
        )
    console.print(table)


def _page(blocks: list[str]) -> None:
    """Print ``blocks``; through the pager when stdout is a terminal."""
    console = stdout_console()
    text = "\n\n".join(blocks)
    if console.is_terminal:
        with console.pager(styles=False):
            console.print(text, markup=False, highlight=False)
    else:
        console.print(text, markup=False, highlight=False, soft_wrap=True)


# -- context ------------------------------------------------------------------
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
    b = built.budget
    return {
        "session_id": record.id,
        "model": record.model,
        "system_prompt": built.system_prompt,
        "token_estimate": built.token_estimate,
        "budget": {
            "context_limit": b.context_limit,
            "reserved_output_tokens": b.reserved_output_tokens,
            "compaction_buffer": b.compaction_buffer,
            "usable": b.usable,
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
        int | None,
        typer.Option(
            "--context-limit", min=1, max=MAX_COUNT, help="Model window to budget for (tokens)."
        ),
    ] = None,
    max_output_tokens: Annotated[
        int | None,
        typer.Option("--max-output-tokens", min=0, max=MAX_COUNT, help="Output tokens to reserve."),
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
