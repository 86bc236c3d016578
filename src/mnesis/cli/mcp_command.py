"""``mnesis mcp``: serve the LCM tools of a database over MCP (stdio or streamable HTTP)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

import typer

from mnesis.cli._common import DbOption, checked_database
from mnesis.errors import MissingDependencyError

__all__ = ["mcp_command"]


def mcp_command(
    db: DbOption = None,
    session: Annotated[
        list[str] | None,
        typer.Option(
            "--session",
            help="Serve only this session (repeatable); the first is the default.",
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Serve only the sessions of this agent.")
    ] = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="HTTP port.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="MNESIS_MCP_TOKEN",
            help="Bearer token HTTP clients must send (required off loopback).",
            show_default=False,
        ),
    ] = None,
    expand_query: Annotated[
        bool,
        typer.Option(
            "--expand-query",
            help="Also offer lcm_expand_query, answered with each session's own model.",
        ),
    ] = False,
    log_format: Annotated[
        str, typer.Option("--log-format", help="Logs on stderr: text or json.")
    ] = "text",
) -> None:
    """Serve `lcm_grep`, `lcm_describe`, `lcm_expand` and `lcm_sessions` over MCP, for
    Claude Code, Cursor and other MCP clients (needs the `mcp` extra).

    stdio by default: `claude mcp add mnesis -- mnesis mcp --db ~/.mnesis/sessions.db`.
    With `--http`: streamable HTTP at `http://HOST:PORT/mcp`, Prometheus metrics at
    `/metrics` and `/healthz`; loopback only unless a `--token` is set.
    """
    from mnesis.logs import configure_logging

    if log_format not in ("text", "json"):
        raise typer.BadParameter("--log-format must be text or json")
    fmt: Literal["text", "json"] = "json" if log_format == "json" else "text"
    with checked_database(db, must_exist=True) as (config, path):
        from mnesis.mcp import MnesisMCP, build_server, check_bind, run_stdio, serve_http

        metrics = None
        if http:
            check_bind(host, token)
            try:
                from mnesis.metrics import PrometheusMetrics

                metrics = PrometheusMetrics()
            except MissingDependencyError:
                metrics = None
        state = MnesisMCP(
            config,
            db_path=path,
            session_ids=session or (),
            agent=agent,
            metrics=metrics,
            expand_query=expand_query,
        )
        configure_logging(format=fmt, level="INFO" if http else "WARNING")
        if http:
            typer.echo(f"mnesis MCP on http://{host}:{port}/mcp", err=True)
            asyncio.run(serve_http(state, host=host, port=port, token=token))
        else:
            asyncio.run(run_stdio(build_server(state)))
