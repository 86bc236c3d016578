"""A plain async function as ``llm=`` (issue 27, item 5): tools are passed to a function
that takes them, refused with a typed error for one that cannot (never dropped), its
reply may carry tool calls, and in the Anthropic format it receives the request with
the prompt-caching breakpoints of the hand-written SDK loop."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.errors import InvalidArgumentError, LLMResponseError, ToolsNotSupportedError
from mnesis.llm import FunctionClient, LLMRequest, complete
from mnesis.llm.function_client import accepts_keyword, parse_reply
from tests.backends import fetch

EPHEMERAL = {"type": "ephemeral"}
NO_AUTO = MnesisConfig(compaction=CompactionConfig(auto=False))


async def _session(tmp_path: Path, llm: Any) -> MnesisSession:
    return await MnesisSession.create(
        model="anthropic/claude-sonnet-4-5",
        db_path=str(tmp_path / "s.db"),
        llm=llm,
        system_prompt="Be brief.",
        config=NO_AUTO.model_copy(deep=True),
    )


def _rows(tmp_path: Path) -> int:
    return len(fetch(str(tmp_path / "s.db"), "SELECT id FROM messages"))


class TestTools:
    async def test_a_function_without_a_tools_parameter_is_refused_before_anything_is_stored(
        self, tmp_path: Path
    ) -> None:
        calls: list[Any] = []

        async def reply(messages: list[dict[str, Any]]) -> str:
            calls.append(messages)
            return "no tools here"

        session = await _session(tmp_path, reply)
        tools = session.lcm_tool_definitions()
        with pytest.raises(ToolsNotSupportedError, match="cannot take tools") as info:
            await session.send("Which port?", tools=tools, run_lcm_tools=True)
        assert isinstance(info.value, InvalidArgumentError) and "reply" in str(info.value)
        with pytest.raises(ToolsNotSupportedError):
            async for _ in session.stream("Which port?", tools=tools):
                pass
        assert calls == [] and _rows(tmp_path) == 0
        # Without tools the same function answers as before.
        assert (await session.send("hello")).text == "no tools here"
        await session.close()

    async def test_the_tools_reach_a_function_that_takes_them_and_its_tool_calls_run(
        self, tmp_path: Path
    ) -> None:
        seen: list[tuple[list[dict[str, Any]], Any]] = []

        async def gpt(messages: list[dict[str, Any]], *, tools: Any = None) -> Any:
            seen.append((messages, tools))
            if messages[-1]["role"] == "tool":
                return {"role": "assistant", "content": "The port is 8443."}
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lcm_grep", "arguments": '{"query": "port"}'},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}

        session = await _session(tmp_path, gpt)
        await session.record("the port is 8443", "noted")
        tools = session.lcm_tool_definitions()
        result = await session.send("Which port?", tools=tools, run_lcm_tools=True)
        assert result.text == "The port is 8443."
        assert len(seen) == 2 and all(t == tools for _, t in seen)
        assert seen[1][0][-1]["tool_call_id"] == "call_1"
        assert '"matches"' in seen[1][0][-1]["content"]
        # A turn without tools calls the function without the keyword.
        await session.send("thanks")
        assert seen[-1][1] is None
        await session.close()

    def test_keyword_detection(self) -> None:
        async def plain(messages: Any) -> str:
            return ""

        async def anything(messages: Any, **kwargs: Any) -> str:
            return ""

        async def positional_only(messages: Any, tools: Any, /) -> str:
            return ""

        assert not accepts_keyword(plain, "tools")
        assert accepts_keyword(anything, "tools")
        assert not accepts_keyword(positional_only, "tools")
        assert FunctionClient(anything).accepts_tools
        assert not FunctionClient(plain).accepts_tools


class TestReplies:
    def test_provider_replies_become_text_calls_and_usage(self) -> None:
        completion = {
            "choices": [
                {
                    "message": {
                        "content": "hi",
                        "tool_calls": [
                            {"id": "c1", "function": {"name": "f", "arguments": '{"a": 1}'}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
        }
        chunk = parse_reply(completion)
        assert (chunk.text, chunk.finish_reason) == ("hi", "tool_calls")
        assert [(c.id, c.name, c.arguments) for c in chunk.tool_calls] == [("c1", "f", {"a": 1})]
        assert chunk.usage is not None and chunk.usage.total == 7

        anthropic = types.SimpleNamespace(
            model_dump=lambda: {
                "content": [
                    {"type": "thinking", "thinking": "hm"},
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "g", "input": {"q": "x"}},
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 9},
            }
        )
        chunk = parse_reply(anthropic)
        assert (chunk.text, chunk.finish_reason) == ("Let me look.", "tool_calls")
        assert [(c.id, c.name, c.arguments) for c in chunk.tool_calls] == [
            ("toolu_1", "g", {"q": "x"})
        ]
        assert chunk.usage is not None and (chunk.usage.total, chunk.usage.cache_read) == (7, 9)
        assert parse_reply({"content": [{"type": "text", "text": "x"}]}).finish_reason == "stop"

    @pytest.mark.parametrize("bad", [42, None, ["text"]])
    async def test_anything_else_is_refused(self, bad: object) -> None:
        async def fn(messages: Any) -> object:
            return bad

        with pytest.raises(LLMResponseError, match="must return a str"):
            await complete(FunctionClient(fn), LLMRequest("m", []), timeout=5)


class TestAnthropicFormat:
    def test_it_needs_a_system_keyword_and_a_known_format(self) -> None:
        async def no_system(messages: Any) -> str:
            return ""

        with pytest.raises(InvalidArgumentError, match="system= keyword"):
            FunctionClient(no_system, wire_format="anthropic")
        with pytest.raises(InvalidArgumentError, match="wire_format"):
            FunctionClient(no_system, wire_format="gemini")

    async def test_it_gets_the_sdk_loops_request_with_breakpoints_and_the_tools(
        self, tmp_path: Path
    ) -> None:
        seen: list[dict[str, Any]] = []

        async def claude(messages: Any, *, system: Any, tools: Any = None) -> dict[str, Any]:
            seen.append({"system": system, "messages": messages, "tools": tools})
            last = messages[-1]["content"][0]
            if last.get("type") == "tool_result":
                return {"content": [{"type": "text", "text": "8443"}], "stop_reason": "end_turn"}
            use = {"type": "tool_use", "id": "toolu_1", "name": "lcm_grep", "input": {"query": "p"}}
            return {"content": [use], "stop_reason": "tool_use"}

        session = await _session(tmp_path, FunctionClient(claude, wire_format="anthropic"))
        await session.record("the port is 8443", "noted")
        tools = session.lcm_tool_definitions(format="anthropic")
        result = await session.send("Which port?", tools=tools, run_lcm_tools=True)
        assert result.text == "8443" and len(seen) == 2
        for request in seen:
            assert request["system"] == [
                {"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}
            ]
            assert request["tools"] == tools
            assert request["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
            marked = [b for m in request["messages"] for b in m["content"] if "cache_control" in b]
            assert len(marked) == 1
        # The second request is what the hand-written SDK loop would send at that point.
        assert seen[1]["messages"][-1]["content"][0]["type"] == "tool_result"
        await session.close()
