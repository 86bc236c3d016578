"""The MCP server over streamable HTTP: bearer-token auth, ``/metrics`` and ``/healthz``.

Routes: ``/mcp`` (the MCP endpoint), ``/metrics`` (the ``lcm_*`` series in the
Prometheus text format) and ``/healthz`` (always open, says ``ok``). With a token,
every route but ``/healthz`` needs ``Authorization: Bearer <token>``, compared in
constant time; anything else gets a bare 401. The server binds to loopback by default
and refuses a non-loopback address without a token.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mnesis.errors import InvalidArgumentError, MissingDependencyError
from mnesis.mcp.server import MnesisMCP, build_server

__all__ = ["BearerAuth", "build_http_app", "check_bind", "serve_http"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_OPEN_PATHS = frozenset({"/healthz"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only reaches this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve on a non-loopback ``host`` without a bearer ``token``."""
    if token is not None and not token.strip():
        raise InvalidArgumentError("the bearer token must not be empty")
    if not is_loopback(host) and token is None:
        raise InvalidArgumentError(
            f"refusing to serve MCP on non-loopback address {host!r} without a bearer token "
            "(pass --token or set MNESIS_MCP_TOKEN)"
        )


class BearerAuth:
    """ASGI middleware: every HTTP request but ``/healthz`` needs ``Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") not in _OPEN_PATHS:
            given = b""
            for key, value in scope.get("headers", []):
                if key.lower() == b"authorization":
                    given = value
                    break
            # The scheme is case-insensitive (RFC 9110 §11.1); the token is compared exactly.
            scheme, _, credentials = given.partition(b" ")
            matches = hmac.compare_digest(credentials.lstrip(b" "), self._expected)
            if not (matches and scheme.lower() == b"bearer"):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"www-authenticate", b"Bearer"), (b"content-length", b"0")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


def build_http_app(
    state: MnesisMCP, *, host: str = "127.0.0.1", token: str | None = None
) -> ASGIApp:
    """The ASGI app serving ``state`` at ``/mcp`` with ``/metrics`` and ``/healthz``."""
    check_bind(host, token)
    try:
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse, Response
        from starlette.routing import Route
    except ImportError as exc:
        raise MissingDependencyError("the MCP server over HTTP", "mcp") from exc

    async def metrics(request: Request) -> Response:
        if state.metrics is None:
            return PlainTextResponse("metrics are off (install the metrics extra)", 404)
        body, content_type = state.metrics.exposition()
        return Response(body, media_type=content_type)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    app: ASGIApp = build_server(state).streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        custom_starlette_routes=[Route("/metrics", metrics), Route("/healthz", healthz)],
    )
    return app if token is None else BearerAuth(app, token)


async def serve_http(
    state: MnesisMCP,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    log_level: str = "warning",
) -> None:
    """Serve ``state`` over streamable HTTP until interrupted."""
    app = build_http_app(state, host=host, token=token)
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level))
    await server.serve()
