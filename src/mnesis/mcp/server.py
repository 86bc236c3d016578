"""MCP server: ``lcm_grep``, ``lcm_describe``, ``lcm_expand``, ``lcm_sessions`` (and
``lcm_expand_query`` when a model is configured) for Claude Code, Cursor and any other
MCP client (extra ``mcp``).

A thin adapter over the definitions of :mod:`mnesis.retrieval.tools`: the input
schemas are the library's own (plus a ``session_id`` argument), each result comes back
as ``structuredContent`` matching the tool's output schema with a readable text block,
and a call that cannot run comes back with ``isError=true`` and a message a model can
act on. Which sessions it answers for is a :class:`~mnesis.mcp.scope.SessionScope`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mnesis.config import MnesisConfig
from mnesis.errors import MissingDependencyError, MnesisError, NotFoundError, OutOfScopeError
from mnesis.mcp.render import render_result
from mnesis.mcp.scope import NotServedError, SessionScope
from mnesis.metrics import PrometheusMetrics
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.tools import (
    SESSION_ID_PARAMETER,
    SESSIONS_TOOL,
    SessionList,
    SessionSummary,
    output_schema,
    run_lcm_tool,
    tool_specs,
)
from mnesis.session import MnesisSession
from mnesis.store.immutable import ImmutableStore
from mnesis.store.pool import StorePool

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from mnesis.llm.base import LLMClient

__all__ = ["MnesisMCP", "build_server", "mcp_tools", "run_stdio"]

_INSTRUCTIONS = (
    "Tools over a mnesis session store: the full, lossless history of long agent sessions. "
    "Use lcm_grep to find anything (natural-language questions work), lcm_describe on the "
    "IDs it returns, and lcm_expand to read the original messages behind a summary "
    "(page with next_cursor). lcm_sessions lists the sessions served here."
)

_RETRIEVAL_TOOLS = ("lcm_grep", "lcm_describe", "lcm_expand")
_ID_ARGUMENTS = ("id", "summary_id")


class ToolCallError(MnesisError):
    """A tool call that cannot run; its message goes back to the client as-is."""


class MnesisMCP:
    """The state behind the MCP tools: one store, a scope, optional metrics and model.

    ``llm`` (or ``expand_query=True``: each session's own model) enables
    ``lcm_expand_query``; ``metrics`` times every search and expansion.
    """

    def __init__(
        self,
        config: MnesisConfig | None = None,
        *,
        db_path: str | None = None,
        session_id: str | None = None,
        session_ids: Sequence[str] = (),
        agent: str | None = None,
        pool: StorePool | None = None,
        metrics: PrometheusMetrics | None = None,
        llm: LLMClient | None = None,
        expand_query: bool = False,
    ) -> None:
        self.config = config or MnesisConfig.from_env()
        self.db_path = db_path or self.config.store.db_path
        ids = [*([session_id] if session_id else []), *session_ids]
        self.scope = SessionScope(ids, agent)
        self.pool = pool or StorePool()
        self.metrics = metrics
        self.llm = llm
        self.offers_expand_query = expand_query or llm is not None
        self._store: ImmutableStore | None = None

    async def store(self) -> ImmutableStore:
        """The (lazily opened) store."""
        if self._store is None:
            self._store = await self.pool.acquire(self.db_path, config=self.config.store)
        return self._store

    async def close(self) -> None:
        """Release the store."""
        if self._store is not None:
            await self._store.close()
            self._store = None

    def tool_names(self) -> list[str]:
        """The tools this server offers."""
        extra = ["lcm_expand_query"] if self.offers_expand_query else []
        return [*_RETRIEVAL_TOOLS, *extra, "lcm_sessions"]

    async def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Run one tool call; returns the structured result.

        Raises ``ToolCallError`` with a message for the client when the call cannot run;
        a missing ID and one outside the scope give the same message.
        """
        args = dict(arguments or {})
        if name not in self.tool_names():
            raise ToolCallError(f"unknown tool {name!r}; this server offers {self.tool_names()}")
        try:
            if name == "lcm_sessions":
                return await self.sessions(**args)
            store = await self.store()
            session_id = await self.scope.resolve(store, args.pop("session_id", None))
            if name == "lcm_expand_query":
                return await self._expand_query(session_id, args)
            engine = RetrievalEngine(store, session_id, config=self.config.retrieval)
            if self.metrics is not None:
                self.metrics.observe(engine)
            return await run_lcm_tool(engine, name, args)
        except (NotFoundError, OutOfScopeError):
            raise ToolCallError(str(NotServedError(_named_id(args)))) from None
        except (MnesisError, ValueError, TypeError) as exc:
            raise ToolCallError(f"{type(exc).__name__}: {exc}") from None

    async def sessions(self, limit: int = 20) -> dict[str, Any]:
        """The newest served sessions, as ``lcm_sessions`` returns them."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200:
            raise ValueError(f"limit must be an integer from 1 to 200, got {limit!r}")
        records = await self.scope.sessions(await self.store(), limit=limit)
        listed = SessionList(
            sessions=[SessionSummary.model_validate(r, from_attributes=True) for r in records]
        )
        return listed.model_dump(mode="json")

    async def _expand_query(self, session_id: str, args: dict[str, Any]) -> dict[str, Any]:
        # Without a config: the session runs with its own (a config given to ``load``
        # would become the session's, as an agent's does).
        session = await MnesisSession.load(
            session_id, db_path=self.db_path, pool=self.pool, llm=self.llm
        )
        try:
            if self.metrics is not None:
                self.metrics.observe(session.retrieval)
            result = await session.expand_query(**args)
        finally:
            await session.close()
        return result.model_dump(mode="json")


def _named_id(args: dict[str, Any]) -> str:
    for key in _ID_ARGUMENTS:
        if isinstance(args.get(key), str):
            return str(args[key])
    return str(args.get("session_id") or "")


def mcp_tools(state: MnesisMCP) -> list[dict[str, Any]]:
    """The tool list of ``state`` as MCP ``Tool`` dicts (camelCase keys)."""
    specs = {**tool_specs([n for n in state.tool_names() if n != "lcm_sessions"])}
    specs["lcm_sessions"] = json.loads(json.dumps(SESSIONS_TOOL))
    tools = []
    for name, spec in specs.items():
        schema = spec["parameters"]
        if name != "lcm_sessions":
            schema["properties"]["session_id"] = dict(SESSION_ID_PARAMETER)
        tools.append(
            {
                "name": name,
                "description": spec["description"],
                "inputSchema": schema,
                "outputSchema": output_schema(name),
                "annotations": {"readOnlyHint": name != "lcm_expand_query"},
            }
        )
    return tools


def build_server(state: MnesisMCP) -> Server[Any]:
    """A low-level MCP ``Server`` exposing the LCM tools of ``state``'s database."""
    try:
        import mcp.types as types
        from mcp.server.context import ServerRequestContext
        from mcp.server.lowlevel import Server
    except ImportError as exc:
        raise MissingDependencyError("the MCP server", "mcp") from exc

    tools = [types.Tool.model_validate(t) for t in mcp_tools(state)]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            data = await state.call(params.name, params.arguments)
        except ToolCallError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(exc))], is_error=True
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=render_result(params.name, data))],
            structured_content=data,
        )

    return Server(
        "mnesis",
        instructions=f"{_INSTRUCTIONS} This server serves {state.scope.describe()}.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def run_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on this process's stdin/stdout."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
