"""The MCP server, exercised for real through an in-process MCP client."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.tools import SESSION_ID_PARAMETER, output_schema, tool_specs
from tests.mcp.conftest import Stored

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mnesis.mcp import MnesisMCP, build_server  # noqa: E402


@contextlib.asynccontextmanager
async def serving(stored: Stored, **scope: Any) -> AsyncIterator[Client]:
    """An in-process MCP client of a server over ``stored`` (not a fixture: the client's
    cancel scope must open and close in one task)."""
    state = MnesisMCP(MnesisConfig(), db_path=stored.db_path, **scope)
    try:
        async with Client(build_server(state)) as client:
            yield client
    finally:
        await state.close()


@contextlib.asynccontextmanager
async def engine_of(stored: Stored, session_id: str) -> AsyncIterator[RetrievalEngine]:
    pool = StorePool()
    store = await pool.acquire(stored.db_path, config=MnesisConfig().store)
    try:
        yield RetrievalEngine(store, session_id, config=MnesisConfig().retrieval)
    finally:
        await store.close()
        await pool.close_all()


async def _ok(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.content[0].type == "text" and result.content[0].text  # type: ignore[union-attr]
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _error(client: Client, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str) and text
    return text


class TestToolDefinitions:
    async def test_schemas_are_the_librarys_own_plus_session_id(self, stored: Stored) -> None:
        async with serving(stored) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"lcm_grep", "lcm_describe", "lcm_expand", "lcm_sessions"}
        for name, spec in tool_specs(["lcm_grep", "lcm_describe", "lcm_expand"]).items():
            schema = dict(tools[name].input_schema)
            properties = dict(schema.pop("properties"))
            assert properties.pop("session_id") == SESSION_ID_PARAMETER
            assert {**schema, "properties": properties} == spec["parameters"]
            assert tools[name].description == spec["description"]
            assert tools[name].output_schema == output_schema(name)
        grep = tool_specs(["lcm_grep"])["lcm_grep"]["parameters"]["properties"]
        assert grep["mode"]["enum"] == ["full_text", "regex"]
        assert all("description" in p for p in grep.values())

    async def test_expand_query_is_offered_only_with_a_model(self, stored: Stored) -> None:
        async with serving(stored, expand_query=True) as client:
            names = {t.name for t in (await client.list_tools()).tools}
        assert "lcm_expand_query" in names


class TestToolResults:
    async def test_expand_query_answers_like_the_library_with_the_sessions_model(
        self, stored: Stored, tmp_path: Path
    ) -> None:
        # Expansion writes a sub-session: work on a copy of the shared database.
        copy = str(tmp_path / "copy.db")
        shutil.copyfile(stored.db_path, copy)
        stored = dataclasses.replace(stored, db_path=copy)
        args = {"prompt": "What was the build number at step 7?", "query": "build number"}
        async with serving(stored, expand_query=True) as client:
            answered = await _ok(client, "lcm_expand_query", {**args, "session_id": stored.alpha})
        pool = StorePool()
        session = await MnesisSession.load(stored.alpha, db_path=stored.db_path, pool=pool)
        try:
            expected = await session.expand_query(args["prompt"], query=args["query"])
        finally:
            await session.close()
            await pool.close_all()
        assert answered["answer"] and answered["answer"] == expected.answer
        assert answered["cited_ids"] == expected.cited_ids
        assert answered["sub_session_id"] not in (None, expected.sub_session_id)

    async def test_each_tool_returns_what_the_library_returns(self, stored: Stored) -> None:
        async with serving(stored) as client, engine_of(stored, stored.beta) as engine:
            grep = await _ok(client, "lcm_grep", {"query": "which port is the API on?"})
            assert grep == (await engine.grep("which port is the API on?")).model_dump(mode="json")
            assert grep["matches"][0]["id"] == stored.fact_message_id

            described = await _ok(client, "lcm_describe", {"id": stored.fact_message_id})
            expected = await engine.describe(stored.fact_message_id)
            assert described == expected.model_dump(mode="json")

            sessions = await _ok(client, "lcm_sessions", {})
            assert [s["id"] for s in sessions["sessions"]] == [stored.beta, stored.alpha]

        async with serving(stored) as client, engine_of(stored, stored.alpha) as engine:
            args = {"summary_id": stored.leaf_id, "session_id": stored.alpha}
            expanded = await _ok(client, "lcm_expand", args)
            assert expanded == (await engine.expand(stored.leaf_id)).model_dump(mode="json")
            assert expanded["messages"]

    async def test_errors_are_is_error_with_an_actionable_message(self, stored: Stored) -> None:
        async with serving(stored) as client:
            assert "not a session ID" in await _error(
                client, "lcm_grep", {"query": "x", "session_id": "sess_bad"}
            )
            assert "depth" in await _error(
                client, "lcm_expand", {"summary_id": stored.leaf_id, "depth": 0}
            )
            assert "unexpected arguments" in await _error(
                client, "lcm_describe", {"id": stored.fact_message_id, "bogus": 1}
            )
            assert "not found" in await _error(
                client, "lcm_expand", {"summary_id": "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV"}
            )

    @pytest.mark.parametrize("depth", [1, 3])
    async def test_paging_a_truncated_expand_returns_every_source_once(
        self, stored: Stored, depth: int
    ) -> None:
        summary_id = stored.leaf_id if depth == 1 else stored.condensed_or_leaf_id
        base = {"summary_id": summary_id, "session_id": stored.alpha, "depth": depth}
        async with serving(stored) as client:
            whole = await _ok(client, "lcm_expand", {**base, "token_cap": 10**6})
            assert not whole["truncated"]
            seen_messages: list[str] = []
            seen_summaries: list[str] = []
            cursor, pages = None, 0
            while True:
                page = await _ok(client, "lcm_expand", {**base, "token_cap": 700, "cursor": cursor})
                pages += 1
                seen_messages += [m["id"] for m in page["messages"]]
                seen_summaries += [s["id"] for s in page["summaries"]]
                cursor = page["next_cursor"]
                assert (cursor is not None) == page["truncated"]
                if cursor is None:
                    break
                assert pages < 500
        assert pages > 1, "the cap must force paging"
        assert sorted(seen_messages) == sorted(m["id"] for m in whole["messages"])
        assert len(set(seen_messages)) == len(seen_messages)
        assert seen_summaries == [s["id"] for s in whole["summaries"]]

    async def test_a_cursor_for_other_arguments_is_refused(self, stored: Stored) -> None:
        base = {"summary_id": stored.leaf_id, "session_id": stored.alpha, "token_cap": 700}
        async with serving(stored) as client:
            cursor = (await _ok(client, "lcm_expand", base))["next_cursor"]
            assert cursor
            message = await _error(client, "lcm_expand", {**base, "depth": 2, "cursor": cursor})
            assert "cursor" in message


class TestScope:
    async def test_out_of_scope_ids_read_exactly_like_missing_ones(self, stored: Stored) -> None:
        missing_session = "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"
        missing_message = "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV"
        async with serving(stored, session_ids=[stored.beta]) as client:
            sessions = await _ok(client, "lcm_sessions", {})
            assert [s["id"] for s in sessions["sessions"]] == [stored.beta]
            for name, args, missing in [
                (
                    "lcm_grep",
                    {"query": "build", "session_id": stored.alpha},
                    {"query": "build", "session_id": missing_session},
                ),
                (
                    "lcm_describe",
                    {"id": stored.alpha_message_id},
                    {"id": missing_message},
                ),
            ]:
                refused = await _error(client, name, args)
                absent = await _error(client, name, missing)
                hidden = str(args.get("session_id") or args.get("id"))
                gone = str(missing.get("session_id") or missing.get("id"))
                assert refused.replace(hidden, "ID") == absent.replace(gone, "ID")
            await _ok(client, "lcm_describe", {"id": stored.fact_message_id})

    async def test_agent_scope(self, stored: Stored) -> None:
        async with serving(stored, agent="alpha") as client:
            sessions = await _ok(client, "lcm_sessions", {})
            assert [s["id"] for s in sessions["sessions"]] == [stored.alpha]
            grep = await _ok(client, "lcm_grep", {"query": "build number"})
            assert grep["matches"] and {m["session_id"] for m in grep["matches"]} == {stored.alpha}
            await _error(client, "lcm_grep", {"query": "port", "session_id": stored.beta})


class TestTheMcpCommand:
    async def test_mnesis_mcp_serves_over_stdio(self, stored: Stored) -> None:
        import os
        import shutil
        import sys

        from mcp import StdioServerParameters

        command = shutil.which("mnesis") or sys.executable
        tail = ["mcp", "--db", stored.db_path, "--session", stored.alpha]
        args = tail if command != sys.executable else ["-m", "mnesis.cli", *tail]
        params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
        async with Client(params) as client:
            result = await client.call_tool("lcm_sessions", {})
        assert result.structured_content == {
            "sessions": [
                {
                    "id": stored.alpha,
                    "model": "fake/m",
                    "agent": "alpha",
                    "parent_id": None,
                    "title": None,
                    "created_at": result.structured_content["sessions"][0]["created_at"],  # type: ignore[index]
                }
            ]
        }
