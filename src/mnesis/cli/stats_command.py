"""``mnesis stats``: what a database (or one session) holds."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from mnesis.cli._common import DbOption, JsonOption, echo_json, format_bytes, stdout_console
from mnesis.cli._store import run_read_only
from mnesis.config import MnesisConfig
from mnesis.store.immutable import ImmutableStore
from mnesis.store.session_stats import SessionStats

__all__ = ["stats_command"]


def _session_stats(stats: SessionStats) -> dict[str, Any]:
    kinds = sorted(stats.summaries_by_kind.items(), key=lambda kv: (kv[0] != "leaf", kv[0]))
    return {
        "messages": stats.messages,
        "compactions": stats.compactions,
        "parts": stats.parts,
        "tool_calls": stats.tool_calls,
        "pruned_tool_outputs": stats.pruned_tool_outputs,
        "message_tokens": stats.message_tokens,
        "context_tokens": stats.context_tokens,
        "model_tokens": stats.model_tokens,
        "summaries": stats.summaries,
        "summaries_by_kind": dict(kinds),
        "summaries_by_level": {str(k): v for k, v in sorted(stats.summaries_by_level.items())},
        "summaries_by_depth": {str(k): v for k, v in sorted(stats.summaries_by_depth.items())},
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
            stats = await store.session_stats(ids)
        else:
            ids = await store.list_session_ids()
            stats = await store.session_stats(None)
        total: dict[str, Any] = {"sessions": len(ids)}
        for sid in ids:
            _merge(total, _session_stats(stats.get(sid) or SessionStats(sid)))
        total["db_bytes"] = await store.used_bytes()
        return total

    data, location = run_read_only(db, body)
    data = {"database": location, "session_id": session_id, **data}
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
