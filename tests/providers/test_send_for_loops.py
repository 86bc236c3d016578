"""``send()`` / ``stream()`` for real agent loops (issue 27, items 5), through litellm
against the provider-compatible servers on 127.0.0.1 that record every request body:

* a turn continues after a tool mnesis does not own: ``complete_tool_call`` then
  ``send()`` / ``stream()`` without a new user message;
* every request to an Anthropic model carries the prompt-caching breakpoints the
  hand-written SDK loop gets from ``context_for_next_turn(format="anthropic",
  cache_control=True)``: the system prompt, the last summary, the last block.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.errors import InvalidArgumentError, LLMError
from mnesis.llm import Fail, FakeLLM, LiteLLMClient, Respond
from mnesis.models.message import TextDelta, TurnComplete, TurnResult
from tests.providers.servers import FINAL_TEXT, ProviderServer

ANTHROPIC_MODEL = "anthropic/claude-test"
EPHEMERAL = {"type": "ephemeral"}
DEPLOY = {
    "type": "function",
    "function": {
        "name": "deploy",
        "description": "Deploy the service.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}
OFFLINE_COMPACTION = MnesisConfig(
    compaction=CompactionConfig(auto=False, compaction_model="extractive")
)


async def _session(
    tmp_path: Path, server: ProviderServer, model: str, *, stream: bool = True
) -> MnesisSession:
    base = server.base_url + ("/v1" if server.kind == "openai" else "")
    client = LiteLLMClient(api_base=base, api_key="sk-local", stream=stream)
    return await MnesisSession.create(
        model=model,
        db_path=str(tmp_path / "s.db"),
        llm=client,
        system_prompt="Be brief.",
        config=OFFLINE_COMPACTION.model_copy(deep=True),
    )


async def _roles(session: MnesisSession) -> list[tuple[str, str | None]]:
    return [(m.role, m.message.parent_id) for m in await session.messages()]


async def _finish(items: Any) -> TurnResult:
    result: TurnResult | None = None
    async for item in items:
        if isinstance(item, TurnComplete):
            result = item.result
        else:
            assert isinstance(item, TextDelta)
    assert result is not None
    return result


class TestContinuingATurn:
    @pytest.mark.parametrize("kind", ["openai", "anthropic"])
    @pytest.mark.parametrize("how", ["send", "stream"])
    async def test_after_the_callers_own_tool_the_model_is_called_again_without_a_user_message(
        self,
        tmp_path: Path,
        openai_server: ProviderServer,
        anthropic_server: ProviderServer,
        kind: str,
        how: str,
    ) -> None:
        server = openai_server if kind == "openai" else anthropic_server
        model = "openai/local" if kind == "openai" else ANTHROPIC_MODEL
        session = await _session(tmp_path, server, model)
        first = await session.send("Deploy it.", tools=[DEPLOY])
        [call] = first.tool_calls
        assert (call.tool_name, call.status.state) == ("deploy", "pending")
        await session.complete_tool_call(call.tool_call_id, output="deployed to 10.0.0.7")

        if how == "send":
            result = await session.send(tools=[DEPLOY])
        else:
            result = await _finish(session.stream(tools=[DEPLOY]))

        assert result.text == FINAL_TEXT
        assert result.user_message_id == first.user_message_id
        assert len(server.bodies) == 2
        last = server.bodies[1]["messages"][-1]
        if kind == "openai":
            assert last == {
                "role": "tool",
                "tool_call_id": call.tool_call_id,
                "content": "deployed to 10.0.0.7",
            }
        else:
            assert last["role"] == "user"
            assert [b["type"] for b in last["content"]] == ["tool_result"]
            assert last["content"][0]["content"] == "deployed to 10.0.0.7"
        # One user message; both assistant rounds answer it.
        user_id = first.user_message_id
        assert await _roles(session) == [
            ("user", None),
            ("assistant", user_id),
            ("assistant", user_id),
        ]
        native = await session.context_for_next_turn()
        assert [m["role"] for m in native] == ["system", "user", "assistant", "tool", "assistant"]
        await session.close()

    async def test_the_continued_turn_runs_lcm_tools_too(
        self, tmp_path: Path, looping_openai_server: ProviderServer
    ) -> None:
        server = looping_openai_server  # calls a tool every time (lcm_grep when offered)
        session = await _session(tmp_path, server, "openai/local")
        first = await session.send("Deploy it.", tools=[DEPLOY])
        await session.complete_tool_call(first.tool_calls[0].tool_call_id, output="done")
        result = await session.send(
            tools=[*session.lcm_tool_definitions(), DEPLOY], run_lcm_tools=True
        )
        # mnesis ran lcm_grep between the continued rounds until the doom-loop guard.
        assert result.finish_reason == "doom_loop"
        assert len(server.bodies) == 1 + session._config.session.doom_loop_threshold
        answered = server.bodies[2]["messages"][-1]
        assert answered["role"] == "tool" and '"matches"' in answered["content"]
        await session.close()

    async def test_a_call_without_its_result_or_an_answered_turn_is_refused_before_any_write(
        self, tmp_path: Path, anthropic_server: ProviderServer
    ) -> None:
        session = await _session(tmp_path, anthropic_server, ANTHROPIC_MODEL)
        with pytest.raises(InvalidArgumentError, match="nothing to continue"):
            await session.send()
        first = await session.send("Deploy it.", tools=[DEPLOY])
        before = await _roles(session)
        with pytest.raises(InvalidArgumentError, match="no result yet") as info:
            await session.send(tools=[DEPLOY])
        assert first.tool_calls[0].tool_call_id in str(info.value)
        with pytest.raises(InvalidArgumentError, match="no result yet"):
            await _finish(session.stream())
        assert await _roles(session) == before and len(anthropic_server.bodies) == 1
        await session.complete_tool_call(first.tool_calls[0].tool_call_id, error="denied")
        await session.send()
        with pytest.raises(InvalidArgumentError, match="ended with the model's answer"):
            await session.send()
        assert len(anthropic_server.bodies) == 2
        await session.close()

    async def test_after_a_failed_model_call_the_same_user_message_is_answered(
        self, tmp_path: Path
    ) -> None:
        llm = FakeLLM().script(Fail("overloaded"), Respond("second try"))
        session = await MnesisSession.create(
            model="fake/m", db_path=str(tmp_path / "s.db"), llm=llm, config=OFFLINE_COMPACTION
        )
        with pytest.raises(LLMError, match="overloaded"):
            await session.send("Which port?")
        result = await session.send()
        assert result.text == "second try"
        user = (await session.messages())[0]
        assert user.role == "user" and result.user_message_id == user.id
        assert [m["role"] for m in llm.calls[1].messages] == ["system", "user"]
        await session.close()


def _breakpoints(body: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Where a request body carries ``cache_control``: ("system", block) or
    ("messages", message, block)."""
    out = [("system", i, -1) for i, b in enumerate(body["system"]) if "cache_control" in b]
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            assert isinstance(block, dict)
            if "cache_control" in block:
                assert block["cache_control"] == EPHEMERAL
                out.append(("messages", m, b))
    return out


def _summary_blocks(body: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [
        ("messages", m, b)
        for m, message in enumerate(body["messages"])
        for b, block in enumerate(message["content"])
        if block.get("type") == "text" and block["text"].startswith("[LCM summary")
    ]


class TestPromptCachingInSend:
    async def test_twelve_of_twelve_requests_carry_the_sdk_loops_breakpoints(
        self, tmp_path: Path, anthropic_server: ProviderServer
    ) -> None:
        session = await _session(tmp_path, anthropic_server, ANTHROPIC_MODEL)
        lcm = session.lcm_tool_definitions()
        for i in range(24):
            await session.record(f"where is setting_{i}? " + "context " * 30, f"in {i}.toml")
        assert (await session.compact()).level_used > 0
        await session.send("Which port?", tools=lcm, run_lcm_tools=True)  # 2 requests
        await _finish(session.stream("And now?", tools=lcm, run_lcm_tools=True))  # 2
        first = await session.send("Deploy it.", tools=[DEPLOY])  # 1
        await session.complete_tool_call(first.tool_calls[0].tool_call_id, output="ok")
        sdk_loop = await session.context_for_next_turn(format="anthropic", cache_control=True)
        await session.send(tools=[DEPLOY])  # 1: the continuation
        continued = anthropic_server.bodies[-1]
        assert {"system": continued["system"], "messages": continued["messages"]} == sdk_loop
        for i in range(24, 40):
            await session.record(f"where is setting_{i}? " + "context " * 30, f"in {i}.toml")
        assert (await session.compact()).level_used > 0
        await session.send("Which port again?", tools=lcm, run_lcm_tools=True)  # 2
        await _finish(session.stream("plain question"))  # 1
        second = await session.send("Deploy again.", tools=[DEPLOY])  # 1
        await session.complete_tool_call(second.tool_calls[0].tool_call_id, error="timeout")
        await _finish(session.stream(tools=[DEPLOY]))  # 1
        await session.send("last one")  # 1

        bodies = anthropic_server.bodies
        assert len(bodies) == 12
        carrying = 0
        for body in bodies:
            points = _breakpoints(body)
            last = len(body["messages"]) - 1
            expected = [("system", 0, -1)]
            summaries = _summary_blocks(body)
            expected += summaries[-1:]
            expected.append(("messages", last, len(body["messages"][last]["content"]) - 1))
            assert points == expected, points
            assert len(points) <= 4
            carrying += bool(points)
        assert carrying == 12
        assert sum(bool(_summary_blocks(b)) for b in bodies) == 12
        await session.close()

    async def test_a_non_anthropic_model_gets_no_cache_control(
        self, tmp_path: Path, openai_server: ProviderServer
    ) -> None:
        session = await _session(tmp_path, openai_server, "openai/local")
        await session.send("Which port?", tools=session.lcm_tool_definitions(), run_lcm_tools=True)
        assert len(openai_server.bodies) == 2
        for body in openai_server.bodies:
            assert "cache_control" not in repr(body)
        await session.close()

    async def test_the_client_can_turn_breakpoints_off(
        self, tmp_path: Path, anthropic_server: ProviderServer
    ) -> None:
        client = LiteLLMClient(
            api_base=anthropic_server.base_url, api_key="sk-local", cache_control=False
        )
        session = await MnesisSession.create(
            model=ANTHROPIC_MODEL, db_path=str(tmp_path / "s.db"), llm=client
        )
        await session.send("Which port?")
        assert "cache_control" not in repr(anthropic_server.bodies)
        await session.close()


def test_the_breakpoint_helpers_find_what_they_look_for() -> None:
    body = {
        "system": [{"type": "text", "text": "s", "cache_control": EPHEMERAL}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "[LCM summary x"}]}],
    }
    assert _breakpoints(body) == [("system", 0, -1)]
    assert _summary_blocks(body) == [("messages", 0, 0)]
