"""``mnesis report SESSION -o report.html``: one self-contained HTML page about a session."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from mnesis.cli._common import DbOption, checked_database, cli_errors
from mnesis.config import MnesisConfig
from mnesis.report import DEFAULT_INDEX_CHARS, write_report
from mnesis.report.index import check_budget
from mnesis.store.pool import StorePool

__all__ = ["report_command"]


async def _write(
    config: MnesisConfig, path: str, session_id: str, output: str, index_chars: int
) -> str:
    pool = StorePool()
    store = await pool.acquire(path, config=config.store)
    try:
        data = await write_report(store, session_id, output, index_chars=index_chars)
    finally:
        await store.close()
        await pool.close_all()
    return (
        f"wrote {output}: {len(data.turns)} turns, {len(data.nodes)} summaries, "
        f"{data.pruned_count} pruned tool outputs, {len(data.index.entries)} transcript rows"
        + (f" ({data.index.left_out} earliest messages left out)" if data.index.left_out else "")
    )


def report_command(
    session: Annotated[str, typer.Argument(help="The session ID (sess_…).")],
    output: Annotated[
        str, typer.Option("--output", "-o", help="The HTML file to write.")
    ] = "report.html",
    index_chars: Annotated[
        int,
        typer.Option(
            "--index-chars",
            help="Characters of message text the page holds for its search box and "
            "transcript (each message cut to 160-1,000; past the bound the earliest "
            "messages are left out).",
        ),
    ] = DEFAULT_INDEX_CHARS,
    db: DbOption = None,
) -> None:
    """Write a self-contained HTML report of a session: history versus context tokens
    per turn with the compactions marked, the summary DAG (click a node to read it),
    compactions by level, pruned tool outputs (paged), a search box over the messages and
    a transcript with the compaction points. Opens offline in any browser."""
    with cli_errors():
        check_budget(index_chars)
    with checked_database(db, must_exist=True) as (config, path):
        typer.echo(asyncio.run(_write(config, path, session, output, index_chars)), err=True)
