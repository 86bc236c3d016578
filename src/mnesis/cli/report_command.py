"""``mnesis report SESSION -o report.html``: one self-contained HTML page about a session."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from mnesis.cli._common import DbOption, check_mnesis_database, cli_errors, resolve_config
from mnesis.config import MnesisConfig
from mnesis.report import write_report
from mnesis.store.pool import StorePool

__all__ = ["report_command"]


async def _write(config: MnesisConfig, path: str, session_id: str, output: str) -> str:
    pool = StorePool()
    store = await pool.acquire(path, config=config.store)
    try:
        data = await write_report(store, session_id, output)
    finally:
        await store.close()
        await pool.close_all()
    return (
        f"wrote {output}: {len(data.turns)} turns, {len(data.nodes)} summaries, "
        f"{len(data.pruned)} pruned tool outputs"
    )


def report_command(
    session: Annotated[str, typer.Argument(help="The session ID (sess_…).")],
    output: Annotated[
        str, typer.Option("--output", "-o", help="The HTML file to write.")
    ] = "report.html",
    db: DbOption = None,
) -> None:
    """Write a self-contained HTML report of a session: history versus context tokens
    per turn with the compactions marked, the summary DAG (click a node to read it),
    compactions by level and pruned tool outputs. Opens offline in any browser."""
    with cli_errors():
        config, path = resolve_config(db)
    with cli_errors(path):
        check_mnesis_database(path, must_exist=True)
        typer.echo(asyncio.run(_write(config, path, session, output)), err=True)
