"""The MCP adapter (extra ``mcp``): run it with ``mnesis mcp`` (stdio) or
``mnesis mcp --http`` (streamable HTTP with bearer auth, ``/metrics`` and ``/healthz``)."""

from mnesis.mcp.http import build_http_app, check_bind, serve_http
from mnesis.mcp.scope import NotServedError, SessionScope
from mnesis.mcp.server import MnesisMCP, build_server, mcp_tools, run_stdio

__all__ = [
    "MnesisMCP",
    "NotServedError",
    "SessionScope",
    "build_http_app",
    "build_server",
    "check_bind",
    "mcp_tools",
    "run_stdio",
    "serve_http",
]
