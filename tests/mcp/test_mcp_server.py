"""The MCP server, exercised for real through an in-process MCP client session."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import pytest

from mnesis import MnesisSession, StorePool

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mnesis.mcp import MnesisMCP, build_server  # noqa: E402


@contextlib.asynccontextmanager
async def serving(db_path: str) -> AsyncIterator[tuple[Client, str, str]]:
    """A database with one session, served through an in-process MCP client.

    (Not a fixture: the client's cancel scope must open and close in one task.)
    """
    pool = StorePool()
    session = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
    recorded = await session.record("We moved the API to port 8443.", "Noted.")
    await session.record("unrelated chatter", "ok")
    await session.close()
    await pool.close_all()
    state = MnesisMCP(db_path=db_path)
    async with Client(build_server(state)) as client:
        yield client, session.id, recorded.user_message_id
    await state.close()


def _payload(result: object) -> object:
    content = result.content  # type: ignore[attr-defined]
    return json.loads(content[0].text)


class TestMCPServer:
    async def test_the_lcm_tools_are_listed(self, db_path: str) -> None:
        async with serving(db_path) as (client, _, _):
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"lcm_grep", "lcm_describe", "lcm_expand", "lcm_sessions"} <= names

    async def test_grep_finds_a_fact_in_the_newest_session(self, db_path: str) -> None:
        async with serving(db_path) as (client, session_id, message_id):
            result = _payload(
                await client.call_tool("lcm_grep", {"query": "which port is the API on?"})
            )
            assert isinstance(result, dict)
            assert result["matches"][0]["id"] == message_id
            assert result["matches"][0]["session_id"] == session_id

    async def test_describe_a_message_of_a_named_session(self, db_path: str) -> None:
        async with serving(db_path) as (client, session_id, message_id):
            result = _payload(
                await client.call_tool("lcm_describe", {"id": message_id, "session_id": session_id})
            )
            assert isinstance(result, dict) and result["kind"] == "message" and result["in_context"]

    async def test_bad_ids_come_back_as_errors_not_exceptions(self, db_path: str) -> None:
        async with serving(db_path) as (client, _, _):
            for name, args in [
                ("lcm_describe", {"id": "nope"}),
                ("lcm_expand", {"summary_id": "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV"}),
                ("lcm_grep", {"query": "x", "session_id": "sess_bad"}),
            ]:
                result = _payload(await client.call_tool(name, args))
                assert isinstance(result, dict) and "error" in result

    async def test_sessions_are_listed(self, db_path: str) -> None:
        async with serving(db_path) as (client, session_id, _):
            result = _payload(await client.call_tool("lcm_sessions", {}))
            assert isinstance(result, list) and result[0]["id"] == session_id


class TestTheMcpCommand:
    async def test_mnesis_mcp_serves_over_stdio(self, db_path: str) -> None:
        import shutil
        import sys

        from mcp import StdioServerParameters

        async with serving(db_path) as (_, session_id, _):
            pass
        command = shutil.which("mnesis") or sys.executable
        args = (
            ["mcp", "--db", db_path]
            if command != sys.executable
            else ["-m", "mnesis.cli", "mcp", "--db", db_path]
        )
        params = StdioServerParameters(command=command, args=args)
        async with Client(params) as client:
            result = _payload(await client.call_tool("lcm_sessions", {}))
        assert isinstance(result, list) and result[0]["id"] == session_id
