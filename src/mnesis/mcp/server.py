"""MCP server: ``lcm_grep``, ``lcm_describe``, ``lcm_expand`` and ``lcm_sessions`` for
Claude Code, Cursor and any other MCP client (extra ``mcp``).

A thin adapter: every tool call goes through the same dispatcher the agent tools use
(:func:`mnesis.retrieval.tools.execute_lcm_tool`), against a
:class:`~mnesis.retrieval.RetrievalEngine` bound to one session. Errors are returned
to the client as ``{"error": ...}`` JSON, never raised.

Which session: the ``session_id`` argument of a call, else the server's default
(``mnesis mcp --session ID``), else the most recently created session of the database.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError, MissingDependencyError, MnesisError
from mnesis.models.ids import is_valid_id
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.tools import execute_lcm_tool, tool_specs
from mnesis.store.immutable import ImmutableStore
from mnesis.store.pool import StorePool

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["MnesisMCP", "build_server"]

_INSTRUCTIONS = (
    "Tools over a mnesis session store: the full, lossless history of long agent sessions. "
    "Use lcm_grep to find anything (natural-language questions work), lcm_describe on the "
    "IDs it returns, and lcm_expand to read the original messages behind a summary."
)


class MnesisMCP:
    """The state behind the MCP tools: one store, one default session."""

    def __init__(
        self,
        config: MnesisConfig | None = None,
        *,
        db_path: str | None = None,
        session_id: str | None = None,
        pool: StorePool | None = None,
    ) -> None:
        self.config = config or MnesisConfig.from_env()
        self.db_path = db_path or self.config.store.db_path
        self.default_session_id = session_id
        self.pool = pool or StorePool()
        self._store: ImmutableStore | None = None

    async def store(self) -> ImmutableStore:
        """The (lazily opened) store."""
        if self._store is None:
            self._store = await self.pool.acquire(self.config.store, db_path=self.db_path)
        return self._store

    async def close(self) -> None:
        """Release the store."""
        if self._store is not None:
            await self._store.close()
            self._store = None

    async def _session(self, session_id: str | None) -> str:
        store = await self.store()
        chosen = session_id or self.default_session_id
        if chosen is None:
            newest = await store.list_sessions(limit=1)
            if not newest:
                raise InvalidArgumentError(f"the database {self.db_path} has no sessions yet")
            return newest[0].id
        if not is_valid_id(chosen, "sess"):
            raise InvalidArgumentError(f"{chosen!r} is not a session ID")
        await store.get_session(chosen)
        return chosen

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool call; returns JSON text (``{"error": ...}`` on failure)."""
        args = dict(arguments)
        try:
            session_id = await self._session(args.pop("session_id", None))
            store = await self.store()
        except MnesisError as exc:
            return json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        engine = RetrievalEngine(store, session_id, config=self.config.retrieval)
        return await execute_lcm_tool(engine, name, args)

    async def sessions(self, limit: int = 20) -> str:
        """JSON list of the newest sessions."""
        try:
            store = await self.store()
            records = await store.list_sessions(limit=max(1, min(int(limit), 200)))
        except (MnesisError, ValueError, TypeError) as exc:
            return json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        return json.dumps(
            [
                {
                    "id": r.id,
                    "model": r.model,
                    "agent": r.agent,
                    "parent_id": r.parent_id,
                    "created_at": r.created_at,
                }
                for r in records
            ]
        )


def build_server(state: MnesisMCP) -> MCPServer:
    """An ``MCPServer`` exposing the LCM tools of ``state``'s database."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:
        raise MissingDependencyError("the MCP server", "mcp") from exc

    specs = tool_specs(["lcm_grep", "lcm_describe", "lcm_expand"])
    server: MCPServer = MCPServer("mnesis", instructions=_INSTRUCTIONS)

    @server.tool(name="lcm_grep", description=specs["lcm_grep"]["description"])
    async def lcm_grep(
        query: str,
        session_id: str | None = None,
        mode: str = "full_text",
        scope: str = "both",
        limit: int = 20,
        summary_id: str | None = None,
        cursor: str | None = None,
    ) -> str:
        return await state.call(
            "lcm_grep",
            {
                "session_id": session_id,
                "query": query,
                "mode": mode,
                "scope": scope,
                "limit": limit,
                "summary_id": summary_id,
                "cursor": cursor,
            },
        )

    @server.tool(name="lcm_describe", description=specs["lcm_describe"]["description"])
    async def lcm_describe(id: str, session_id: str | None = None) -> str:
        return await state.call("lcm_describe", {"session_id": session_id, "id": id})

    @server.tool(name="lcm_expand", description=specs["lcm_expand"]["description"])
    async def lcm_expand(
        summary_id: str,
        session_id: str | None = None,
        depth: int = 1,
        include_messages: bool = True,
        token_cap: int | None = None,
    ) -> str:
        return await state.call(
            "lcm_expand",
            {
                "session_id": session_id,
                "summary_id": summary_id,
                "depth": depth,
                "include_messages": include_messages,
                "token_cap": token_cap,
            },
        )

    @server.tool(
        name="lcm_sessions",
        description="List the newest sessions of the database (id, model, agent, created_at).",
    )
    async def lcm_sessions(limit: int = 20) -> str:
        return await state.sessions(limit)

    return server
