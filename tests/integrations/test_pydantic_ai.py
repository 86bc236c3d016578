"""The pydantic-ai adapter under pydantic-ai's own ``Agent.run``, against the rejecting
OpenAI-compatible server, after 50 turns recorded through the adapter with a window small
enough to compact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from mnesis.context import validate
from mnesis.integrations.pydantic_ai import (
    MnesisPydanticMemory,
    to_model_messages,
    to_openai_messages,
)
from tests.integrations.scenario import (
    PORT_FACT,
    QUESTION,
    TURNS,
    new_session,
    openai_turn,
    tool_results_sent,
)
from tests.providers.servers import FINAL_TEXT, ProviderServer


def _agent(server: ProviderServer, memory: MnesisPydanticMemory) -> Agent[None, str]:
    provider = OpenAIProvider(base_url=server.base_url + "/v1", api_key="sk-local")
    return Agent(
        OpenAIChatModel("local-m", provider=provider),
        system_prompt="You are a coding agent.",
        capabilities=[ProcessHistory(memory.history_processor)],
        tools=memory.tools(),
    )


def _parsed_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each call's arguments parsed (pydantic-ai re-serialises them)."""
    out = []
    for message in messages:
        calls = [
            {
                **c,
                "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])},
            }
            for c in message.get("tool_calls") or []
        ]
        out.append({**message, "tool_calls": calls} if calls else message)
    return out


def test_messages_convert_both_ways() -> None:
    turn = openai_turn(3)
    converted = to_model_messages(turn)
    assert [type(m) for m in converted] == [
        ModelRequest,
        ModelResponse,
        ModelRequest,
        ModelResponse,
    ]
    assert isinstance(converted[1].parts[0], ToolCallPart)
    assert isinstance(converted[2].parts[0], ToolReturnPart)
    assert converted[2].parts[0].tool_name == "bash"
    assert to_openai_messages(converted) == turn


async def test_agent_run_answers_from_compacted_history(
    tmp_path: Path, openai_server: ProviderServer
) -> None:
    session = await new_session(tmp_path)
    memory = MnesisPydanticMemory(session)
    try:
        for number in range(TURNS):
            await memory.record(to_model_messages(openai_turn(number)))
        await session.compact()
        window = await session.context_for_next_turn()
        assert {"role": "user", "content": PORT_FACT} not in window
        assert any("[LCM summary" in str(m.get("content")) for m in window)

        agent = _agent(openai_server, memory)
        for _ in range(2):
            window = await session.context_for_next_turn()
            result = await agent.run(QUESTION)
            assert result.output == FINAL_TEXT
            await memory.record(result)
        assert openai_server.rejected == []
        last = openai_server.bodies[-1]
        # The second request of the run: the window once, then the run's own messages.
        assert _parsed_arguments(last["messages"][1:-3]) == _parsed_arguments(window[1:])
        assert [m["role"] for m in last["messages"][-3:]] == ["user", "assistant", "tool"]
        assert last["messages"][0] == {"role": "system", "content": "You are a coding agent."}
        assert any("8443" in text for text in tool_results_sent(last))
        assert {"role": "user", "content": PORT_FACT} not in last["messages"]
        stored = (await session.conversation_messages())[-3:]
        assert [m.role for m in stored] == ["user", "assistant", "assistant"]
        assert [type(p).__name__ for p in stored[1].parts] == ["ToolPart"]
        assert validate(await session.context_for_next_turn(), "openai") == []
    finally:
        await session.close()
