"""``send``, ``stream`` and the tool loop through litellm against an OpenAI-compatible
HTTP server on 127.0.0.1; the exact request bodies it received are asserted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis.llm import LiteLLMClient
from mnesis.models.message import TextDelta, TurnComplete
from tests.providers.servers import FINAL_TEXT, TOOL_ARGS, ProviderServer

MODEL = "openai/local-model"


async def _session(tmp_path: Path, server: ProviderServer, *, stream: bool) -> MnesisSession:
    client = LiteLLMClient(api_base=server.base_url + "/v1", api_key="sk-local", stream=stream)
    return await MnesisSession.create(
        model=MODEL, db_path=str(tmp_path / "s.db"), llm=client, system_prompt="Be brief."
    )


def _streaming(stream: bool) -> dict[str, Any]:
    return {"stream": True, "stream_options": {"include_usage": True}} if stream else {}


class TestSendAndStream:
    async def test_send_without_streaming_posts_system_then_user(
        self, tmp_path: Path, openai_server: ProviderServer
    ) -> None:
        session = await _session(tmp_path, openai_server, stream=False)
        result = await session.send("Which port?")
        assert result.text == FINAL_TEXT and result.finish_reason == "stop"
        assert (result.tokens.input, result.tokens.output) == (11, 7)
        assert openai_server.paths == ["/v1/chat/completions"]
        assert openai_server.bodies == [
            {
                "model": "local-model",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Which port?"},
                ],
                "max_tokens": session.model_info.max_output_tokens,
            }
        ]
        await session.close()

    async def test_stream_yields_the_sse_deltas_and_sends_the_history(
        self, tmp_path: Path, openai_server: ProviderServer
    ) -> None:
        session = await _session(tmp_path, openai_server, stream=True)
        await session.record("hello", "hi there")
        items = [item async for item in session.stream("Which port?")]
        deltas = [i.text for i in items if isinstance(i, TextDelta)]
        assert len(deltas) == 2 and "".join(deltas) == FINAL_TEXT
        assert isinstance(items[-1], TurnComplete) and items[-1].result.text == FINAL_TEXT
        assert openai_server.bodies == [
            {
                "model": "local-model",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "hello"},
                    {"role": "assistant", "content": "hi there"},
                    {"role": "user", "content": "Which port?"},
                ],
                "max_tokens": session.model_info.max_output_tokens,
                **_streaming(True),
            }
        ]
        await session.close()


class TestToolLoop:
    @pytest.mark.parametrize("stream", [True, False], ids=["sse", "whole"])
    async def test_results_go_back_as_tool_messages_and_the_model_finishes_in_two_rounds(
        self, tmp_path: Path, openai_server: ProviderServer, stream: bool
    ) -> None:
        session = await _session(tmp_path, openai_server, stream=stream)
        tools = session.lcm_tool_definitions()
        result = await session.send("Which port?", tools=tools, run_lcm_tools=True)
        assert result.text == FINAL_TEXT and result.finish_reason == "stop"
        assert not result.doom_loop_detected
        assert len(openai_server.bodies) == 2
        [part] = (await session.messages())[1].tool_parts
        assert part.status.state == "completed" and "matches" in json.loads(part.output or "")
        head = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Which port?"},
        ]
        common = {
            "model": "local-model",
            "max_tokens": session.model_info.max_output_tokens,
            "tools": tools,
            **_streaming(stream),
        }
        assert openai_server.bodies[0] == {**common, "messages": head}
        assert openai_server.bodies[1] == {
            **common,
            "messages": [
                *head,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "call_0",
                            "type": "function",
                            "function": {"name": "lcm_grep", "arguments": json.dumps(TOOL_ARGS)},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_0", "content": part.output},
            ],
        }
        # The next context carries the finished exchange the same way.
        context = await session.context_for_next_turn()
        assert context == [
            *openai_server.bodies[1]["messages"][:2],
            {**openai_server.bodies[1]["messages"][2], "content": None},
            openai_server.bodies[1]["messages"][3],
            {"role": "assistant", "content": FINAL_TEXT},
        ]
        await session.close()

    async def test_a_doom_loop_stops_the_loop_with_its_finish_reason(
        self, tmp_path: Path, looping_openai_server: ProviderServer
    ) -> None:
        session = await _session(tmp_path, looping_openai_server, stream=True)
        threshold = session.config.session.doom_loop_threshold
        result = await session.send(
            "Which port?", tools=session.lcm_tool_definitions(), run_lcm_tools=True
        )
        assert result.doom_loop_detected and result.finish_reason == "doom_loop"
        assert len(looping_openai_server.bodies) == threshold
        # The stopped call is answered with an error, so the next context stays valid.
        context = await session.context_for_next_turn()
        assert context[-1]["role"] == "tool" and context[-1]["content"].startswith("Error: Not run")
        await session.close()

    async def test_a_call_of_the_callers_own_tool_is_handed_back(
        self, tmp_path: Path, openai_server: ProviderServer
    ) -> None:
        session = await _session(tmp_path, openai_server, stream=True)
        own = [
            {
                "type": "function",
                "function": {
                    "name": "read_config",
                    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
                },
            }
        ]
        result = await session.send("Which port?", tools=own, run_lcm_tools=True)
        assert result.finish_reason == "tool_calls" and len(openai_server.bodies) == 1
        [call] = result.tool_calls
        assert (call.tool_name, call.status.state) == ("read_config", "pending")
        pending = await session.context_for_next_turn()
        assert pending[-1]["tool_calls"][0]["id"] == call.tool_call_id
        await session.complete_tool_call(call.tool_call_id, output="port = 8443")
        done = await session.context_for_next_turn()
        assert done[-1] == {
            "role": "tool",
            "tool_call_id": call.tool_call_id,
            "content": "port = 8443",
        }
        await session.close()
