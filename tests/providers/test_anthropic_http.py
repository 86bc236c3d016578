"""``send``, ``stream`` and the tool loop through litellm against an Anthropic-Messages-
compatible HTTP server on 127.0.0.1: top-level ``system``, ``tool_use`` /
``tool_result`` blocks and alternating roles in the exact bodies it received."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis.llm import LiteLLMClient
from mnesis.models.message import TextDelta
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from tests.providers.servers import FINAL_TEXT, TOOL_ARGS, ProviderServer

MODEL = "anthropic/claude-test"


async def _session(tmp_path: Path, server: ProviderServer, *, stream: bool) -> MnesisSession:
    client = LiteLLMClient(api_base=server.base_url, api_key="sk-ant-local", stream=stream)
    return await MnesisSession.create(
        model=MODEL, db_path=str(tmp_path / "s.db"), llm=client, system_prompt="Be brief."
    )


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _cached(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` carrying a prompt-caching breakpoint, as ``send`` puts on the system
    prompt and the last block of every request to an Anthropic model."""
    return {**block, "cache_control": {"type": "ephemeral"}}


def _uncached(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


def _roles_alternate(messages: list[dict[str, Any]]) -> bool:
    roles = [m["role"] for m in messages]
    return roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))


class TestMessagesOverHTTP:
    async def test_stream_sends_system_on_top_and_alternating_turns(
        self, tmp_path: Path, anthropic_server: ProviderServer
    ) -> None:
        session = await _session(tmp_path, anthropic_server, stream=True)
        await session.record("hello", "hi there")
        call = ToolPart(
            tool_name="bash",
            tool_call_id="toolu_1",
            input={"cmd": "false"},
            error_message="exit 1",
            status=ToolStatus(state="error"),
        )
        await session.record("run it", [TextPart(text="running"), call])
        deltas = [i.text async for i in session.stream("Which port?") if isinstance(i, TextDelta)]
        assert "".join(deltas) == FINAL_TEXT
        [body] = anthropic_server.bodies
        assert anthropic_server.paths == ["/v1/messages"]
        # The history holds tool blocks and no tools are offered: litellm adds a
        # placeholder tool definition, as the Messages API requires.
        assert [t["name"] for t in body.pop("tools")] == ["dummy_tool"]
        assert body == {
            "model": "claude-test",
            "system": [_cached(_text("Be brief."))],
            "messages": [
                {"role": "user", "content": [_text("hello")]},
                {"role": "assistant", "content": [_text("hi there")]},
                {"role": "user", "content": [_text("run it")]},
                {
                    "role": "assistant",
                    "content": [
                        _text("running"),
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "bash",
                            "input": {"cmd": "false"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": "Error: exit 1",
                        },
                        _cached(_text("Which port?")),
                    ],
                },
            ],
            "max_tokens": session.model_info.max_output_tokens,
            "stream": True,
        }
        assert _roles_alternate(body["messages"])
        await session.close()

    @pytest.mark.parametrize("stream", [True, False], ids=["sse", "whole"])
    async def test_the_tool_loop_answers_with_tool_result_blocks_and_ends_in_two_rounds(
        self, tmp_path: Path, anthropic_server: ProviderServer, stream: bool
    ) -> None:
        session = await _session(tmp_path, anthropic_server, stream=stream)
        result = await session.send(
            "Which port?", tools=session.lcm_tool_definitions(), run_lcm_tools=True
        )
        assert result.text == FINAL_TEXT and result.finish_reason == "stop"
        assert len(anthropic_server.bodies) == 2
        [part] = (await session.messages())[1].tool_parts
        first, second = anthropic_server.bodies
        assert first["system"] == second["system"] == [_cached(_text("Be brief."))]
        assert [t["name"] for t in first["tools"]] == [
            t["name"] for t in session.lcm_tool_definitions(format="anthropic")
        ]
        assert first["messages"] == [{"role": "user", "content": [_cached(_text("Which port?"))]}]
        assert second["messages"] == [
            {"role": "user", "content": [_text("Which port?")]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "call_0", "name": "lcm_grep", "input": TOOL_ARGS}
                ],
            },
            {
                "role": "user",
                "content": [
                    _cached(
                        {"type": "tool_result", "tool_use_id": "call_0", "content": part.output}
                    )
                ],
            },
        ]
        # The same exchange, rendered natively for the Anthropic SDK.
        native = await session.context_for_next_turn(format="anthropic")
        assert native == {
            "system": "Be brief.",
            "messages": [
                *_uncached(second["messages"]),
                {"role": "assistant", "content": [_text(FINAL_TEXT)]},
            ],
        }
        await session.close()
