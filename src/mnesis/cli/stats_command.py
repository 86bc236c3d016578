"""``mnesis stats``: what a database (or one session) holds."""

from __future__ import annotations

import os
from collections import Counter
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from mnesis.cli._common import DbOption, JsonOption, echo_json, format_bytes, stdout_console
from mnesis.cli._store import run_read_only
from mnesis.config import MnesisConfig
from mnesis.models.parts import ToolPart
from mnesis.store.factory import parse_location
from mnesis.store.immutable import ImmutableStore

__all__ = ["stats_command"]


async def _session_stats(store: ImmutableStore, session_id: str) -> dict[str, Any]:
    snapshot = await store.integrity_snapshot(session_id)
    summary_ids = [s[0] for s in snapshot.summaries]
    summaries = await store.get_summaries(summary_ids)
    parts = tools = pruned = 0
    for page_start in range(0, len(snapshot.messages), 2000):
        after = snapshot.messages[page_start][1] - 1
        for message in await store.get_messages(session_id, after_seq=after, limit=2000):
            parts += len(message.parts)
            for part in message.parts:
                if isinstance(part, ToolPart):
                    tools += 1
                    pruned += part.status.compacted_at is not None
    usage = await store.session_token_usage(session_id)
    return {
        "messages": sum(1 for m in snapshot.messages if not m[3]),
        "compactions": sum(1 for m in snapshot.messages if m[3]),
        "parts": parts,
        "tool_calls": tools,
        "pruned_tool_outputs": pruned,
        "message_tokens": sum(m[4] for m in snapshot.messages if not m[3]),
        "context_tokens": await store.context_token_total(session_id),
        "model_tokens": usage.total,
        "summaries": len(summaries),
        "summaries_by_kind": dict(Counter(s.kind for s in summaries)),
        "summaries_by_level": {
            str(k): v for k, v in sorted(Counter(s.level for s in summaries).items())
        },
        "summaries_by_depth": {
            str(k): v for k, v in sorted(Counter(s.depth for s in summaries).items())
        },
    }


def _merge(total: dict[str, Any], one: dict[str, Any]) -> None:
    for key, value in one.items():
        if isinstance(value, dict):
            bucket = total.setdefault(key, {})
            for k, v in value.items():
                bucket[k] = bucket.get(k, 0) + v
        else:
            total[key] = total.get(key, 0) + value


def stats_command(
    session_id: Annotated[
        str | None,
        typer.Argument(metavar="[SESSION_ID]", help="One session (default: the whole database)."),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Count messages, parts, tokens, summaries (by kind, level and depth), compactions,
    pruned tool outputs and the database size."""

    async def body(store: ImmutableStore, config: MnesisConfig) -> dict[str, Any]:
        if session_id is not None:
            await store.get_session(session_id)
            ids = [session_id]
        else:
            ids = await store.list_session_ids()
        total: dict[str, Any] = {"sessions": len(ids)}
        for sid in ids:
            _merge(total, await _session_stats(store, sid))
        return total

    data, location = run_read_only(db, body)
    data = {"database": location, "session_id": session_id, **data}
    parsed = parse_location(location, key="--db")
    if parsed.backend == "sqlite":
        path = os.path.abspath(os.path.expanduser(parsed.target))
        data["db_bytes"] = sum(
            os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p)
        )
    if as_json:
        echo_json(data)
        return
    table = Table(
        title=f"{session_id or 'All sessions'} · {location}",
        title_justify="left",
        show_header=False,
        box=box.SIMPLE,
    )
    table.add_column("what", style="dim")
    table.add_column("value", justify="right")
    for key, value in data.items():
        if key in ("database", "session_id"):
            continue
        if isinstance(value, dict):
            shown = ", ".join(f"{k}: {v:,}" for k, v in value.items()) or "-"
        elif key == "db_bytes":
            shown = format_bytes(int(value))
        else:
            shown = f"{value:,}"
        table.add_row(key.replace("_", " "), shown)
    stdout_console().print(table)
