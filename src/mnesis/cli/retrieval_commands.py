"""``mnesis grep``, ``mnesis describe`` and ``mnesis expand``: retrieval from the shell.

They open the database read-only. ``grep`` searches every session (or one), shows each
hit with its snippet highlighted and the summary that now covers it; ``describe``
explains a summary, message or file ID; ``expand`` prints what a summary hides, a page
at a time (``--max-tokens``, continued with ``--cursor``).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from mnesis.cli._common import (
    DbOption,
    JsonOption,
    count_option,
    echo_json,
    fail,
    format_time,
    stdout_console,
)
from mnesis.cli._store import run_read_only
from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError, MnesisStoreError
from mnesis.retrieval.describe import brief_lines
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.results import DescribeResult, ExpandResult, GrepResult
from mnesis.store.immutable import ImmutableStore

__all__ = ["describe_command", "expand_command", "grep_command"]


def _parse_when(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError:
        raise typer.BadParameter(
            "use a date or time like 2025-06-01 or 2025-06-01T14:30", param_hint=name
        ) from None


async def _engine(
    store: ImmutableStore, config: MnesisConfig, session: str | None
) -> RetrievalEngine:
    if session is not None:
        await store.get_session(session)
        return RetrievalEngine(store, session, config=config.retrieval)
    ids = await store.list_session_ids()
    if not ids:
        raise MnesisStoreError("the database holds no sessions")
    return RetrievalEngine(store, ids[-1], config=config.retrieval)


def grep_command(
    query: Annotated[str, typer.Argument(help="Words to find (or a regex with --regex).")],
    db: DbOption = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Search only this session (default: all).")
    ] = None,
    regex: Annotated[
        bool, typer.Option("--regex", help="Treat QUERY as a regular expression.")
    ] = False,
    since: Annotated[
        str | None, typer.Option("--since", help="Only text stored at or after this date/time.")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Only text stored before this date/time.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=500, help="At most this many hits.")
    ] = 20,
    as_json: JsonOption = False,
) -> None:
    """Search the stored history: messages, tool outputs and summaries, best hits first,
    each with the summary that now covers it (expand that to read around the hit)."""
    start, end = _parse_when(since, "'--since'"), _parse_when(until, "'--until'")

    async def body(store: ImmutableStore, config: MnesisConfig) -> GrepResult:
        engine = await _engine(store, config, session)
        return await engine.grep(
            query,
            mode="regex" if regex else "full_text",
            limit=limit,
            since=start,
            until=end,
            session_ids=[session] if session else None,
            all_sessions=session is None,
        )

    result, _ = run_read_only(db, body)
    if as_json:
        echo_json(result.model_dump())
        return
    console = stdout_console()
    if not result.matches:
        console.print(f"No matches for {escape(query)!r}.")
        return
    pattern = _highlight_pattern(query, regex)
    for match in result.matches:
        where = match.role or "summary"
        head = Text(f"{match.id}", style="bold cyan")
        head.append(f"  {where} · {format_time(match.created_at)} · {match.session_id}", "dim")
        console.print(head)
        body_text = Text("  " + " ".join(match.snippet.split()))
        if pattern is not None:
            body_text.highlight_regex(pattern, "bold yellow")
        console.print(body_text)
        if match.covering_summary_id:
            console.print(
                f"  [magenta]covered by {match.covering_summary_id}[/] "
                f"[dim](mnesis expand {match.leaf_summary_id or match.covering_summary_id})[/]"
            )
        elif match.in_context:
            console.print("  [green]in context[/]")
    more = " (more: raise --limit)" if result.truncated else ""
    console.print(f"[dim]{len(result.matches)} matches{more}[/]")


def _highlight_pattern(query: str, regex: bool) -> re.Pattern[str] | None:
    try:
        if regex:
            return re.compile(query, re.IGNORECASE)
        words = [re.escape(w) for w in re.findall(r"\w+", query) if len(w) > 1]
        return re.compile("|".join(words), re.IGNORECASE) if words else None
    except re.error:
        return None


def describe_command(
    object_id: Annotated[
        str, typer.Argument(metavar="ID", help="A summary (sum_), message (msg_) or file ID.")
    ],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Describe a summary (kind, depth, what it covers), a message or a file."""

    async def body(store: ImmutableStore, config: MnesisConfig) -> DescribeResult:
        session = await _owner(store, object_id)
        engine = RetrievalEngine(store, session, config=config.retrieval)
        return await engine.describe(object_id)

    result, _ = run_read_only(db, body)
    data = result.model_dump()
    if as_json:
        echo_json(data)
        return
    console = stdout_console()
    content = data.pop("content", None) or data.pop("preview", None)
    ledger = data.pop("ledger", None)
    for key, value in data.items():
        if value in (None, [], ""):
            continue
        console.print(f"[dim]{key:>26}[/]  {escape(_short(value))}")
    if ledger:
        console.print()
        for line in brief_lines(ledger):
            console.print(escape(line))
    if content:
        console.print()
        console.print(escape(str(content)))


def _short(value: Any) -> str:
    if isinstance(value, list):
        shown = ", ".join(str(v) for v in value[:6])
        return shown + (f" … ({len(value)} in all)" if len(value) > 6 else "")
    return str(value)


async def _owner(store: ImmutableStore, object_id: str) -> str:
    """The session an ID belongs to (describe and expand are bound to one)."""
    if object_id.startswith("sum_"):
        return (await store.get_summary(object_id)).session_id
    if object_id.startswith("msg_"):
        return (await store.get_message(object_id)).message.session_id
    ids = await store.list_session_ids()
    if not ids:
        raise MnesisStoreError("the database holds no sessions")
    ref = await store.get_file_reference(object_id)
    if ref is None:
        raise InvalidArgumentError(f"{object_id!r} is not a summary, message or file ID")
    return ref.session_id or ids[-1]


def expand_command(
    summary_id: Annotated[
        str, typer.Argument(metavar="SUMMARY_ID", help="A summary ID (sum_...).")
    ],
    db: DbOption = None,
    max_tokens: Annotated[
        int, count_option("--max-tokens", "Print at most about this many tokens.")
    ] = 4000,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="Continue where the previous page stopped.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print what a summary covers: its child summaries and original messages, in full,
    one page of --max-tokens at a time."""
    skip = _parse_cursor(cursor)

    async def body(store: ImmutableStore, config: MnesisConfig) -> ExpandResult:
        session = await _owner(store, summary_id)
        engine = RetrievalEngine(store, session, config=config.retrieval)
        return await engine.expand(summary_id, depth=1)

    result, _ = run_read_only(db, body)
    items: list[dict[str, Any]] = [
        {"type": "summary", **s.model_dump()} for s in result.summaries
    ] + [{"type": "message", **m.model_dump()} for m in result.messages]
    page: list[dict[str, Any]] = []
    used = 0
    for item in items[skip:]:
        if page and used + int(item["token_count"]) > max_tokens:
            break
        page.append(item)
        used += int(item["token_count"])
    end = skip + len(page)
    next_cursor = str(end) if end < len(items) else None
    if as_json:
        echo_json(
            {
                "summary_id": summary_id,
                "items": page,
                "total_items": len(items),
                "tokens": used,
                "next_cursor": next_cursor,
            }
        )
        return
    console = stdout_console()
    for item in page:
        if item["type"] == "summary":
            console.print(
                f"[magenta]{item['id']}[/] [dim]{item['summary_kind']} summary · depth "
                f"{item['depth']} · {item['token_count']:,} tokens[/]"
            )
            console.print(escape(item["content"]))
        else:
            console.print(
                f"[cyan]{item['id']}[/] [dim]{item['role']} · "
                f"{format_time(item['created_at'])} · {item['token_count']:,} tokens[/]"
            )
            console.print(escape(item["text"]))
        console.print()
    console.print(f"[dim]items {skip + 1}-{end} of {len(items)} · {used:,} tokens[/]")
    if next_cursor is not None:
        console.print(f"[dim]more: mnesis expand {summary_id} --cursor {next_cursor}[/]")


def _parse_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        fail(f"--cursor must be the number printed by the previous page, not {cursor!r}", 2)
    return int(cursor)
