"""``mnesis mcp``: serve the LCM tools of a database over MCP (stdio)."""

from __future__ import annotations

from typing import Annotated

import typer

from mnesis.cli._common import DbOption, check_mnesis_database, cli_errors, resolve_config

__all__ = ["mcp_command"]


def mcp_command(
    db: DbOption = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help="Default session for tool calls without session_id (default: the newest).",
        ),
    ] = None,
) -> None:
    """Serve `lcm_grep`, `lcm_describe`, `lcm_expand` and `lcm_sessions` over MCP on
    stdio, for Claude Code, Cursor and other MCP clients (needs the `mcp` extra).

    Example: `claude mcp add mnesis -- mnesis mcp --db ~/.mnesis/sessions.db`
    """
    with cli_errors():
        config, path = resolve_config(db)
    with cli_errors(path):
        check_mnesis_database(path, must_exist=True)
        from mnesis.mcp import MnesisMCP, build_server

        server = build_server(MnesisMCP(config, db_path=path, session_id=session))
    server.run("stdio")
