"""Inspection commands: ``mnesis sessions``, ``mnesis show`` and (re-exported from
:mod:`mnesis.cli.context_command`) ``mnesis context``.

They open the database read-only (see :mod:`mnesis.cli._store`): a missing file or a
SQLite file of another application is refused, and nothing on disk changes.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from mnesis.cli._common import (
    DbOption,
    JsonOption,
    SessionArg,
    count_option,
    echo_json,
    format_time,
    format_tokens,
    stdout_console,
)
from mnesis.cli._parts import full_message_json, full_message_text_block, message_json, part_preview
from mnesis.cli._store import run_read_only
from mnesis.cli.context_command import context_command
from mnesis.errors import InvalidArgumentError
from mnesis.models.clock import now_ms
from mnesis.models.message import MessageWithParts
from mnesis.store.base import SessionRecord
from mnesis.store.immutable import ImmutableStore

__all__ = ["context_command", "sessions_command", "show_command"]


# -- sessions -----------------------------------------------------------------
async def _list_sessions(
    store: ImmutableStore, limit: int
) -> list[tuple[SessionRecord, dict[str, int]]]:
    records = await store.list_sessions(limit=limit)
    stats = await store.session_stats([r.id for r in records])
    rows = []
    for record in records:
        counts = stats[record.id]
        last = record.updated_at
        if counts.last_message_at is not None:
            last = max(last, counts.last_message_at)
        rows.append(
            (
                record,
                {
                    "messages": counts.messages + counts.compactions,
                    "turns": counts.turns,
                    "context_tokens": counts.context_tokens,
                    "tokens_used": counts.model_tokens,
                    "last_activity": last,
                },
            )
        )
    return rows


def sessions_command(
    db: DbOption = None,
    limit: Annotated[
        int, count_option("--limit", "Show at most this many sessions, newest first.")
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
        int, count_option("--limit", "Show the newest N messages (0: all of them).", minimum=0)
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
