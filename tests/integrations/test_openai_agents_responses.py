"""The OpenAI Agents SDK adapter with the SDK's default model, ``OpenAIResponsesModel``,
under ``Runner.run`` and ``Runner.run_streamed`` against the rejecting Responses server
(``POST /v1/responses``), after 50 turns recorded through the adapter with a window
small enough to compact."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from mnesis.context import validate
from mnesis.integrations.openai_agents import MnesisAgentsSession, lcm_function_tools
from tests.integrations.scenario import PORT_FACT, QUESTION, TURNS, new_session, responses_turn
from tests.providers.servers import FINAL_TEXT, ResponsesServer, serve_responses

set_tracing_disabled(True)


@pytest.fixture
def responses_server() -> Iterator[ResponsesServer]:
    yield from serve_responses()


def _agent(server: ResponsesServer, memory: MnesisAgentsSession) -> Agent:
    client = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-local", max_retries=0)
    return Agent(
        name="coder",
        instructions="You are a coding agent.",
        model=OpenAIResponsesModel(model="local-m", openai_client=client),
        tools=lcm_function_tools(memory),
    )


def _outputs(body: dict[str, Any]) -> list[str]:
    return [str(i["output"]) for i in body["input"] if i.get("type") == "function_call_output"]


def test_the_server_rejects_what_the_api_rejects(responses_server: ResponsesServer) -> None:
    url = responses_server.base_url + "/v1/responses"
    turn = responses_turn(1)
    bad = {
        "an output without its call": [turn[0], turn[2]],
        "a call without its output": [turn[0], turn[1], turn[3]],
        "an unknown item type": [turn[0], {"type": "tool_result", "call_id": "x"}],
        "an output message with input parts": [
            turn[0],
            {**turn[3], "content": [{"type": "input_text", "text": "hi"}]},
        ],
    }
    for name, items in bad.items():
        answer = httpx.post(url, json={"model": "m", "input": items}, timeout=10)
        assert answer.status_code == 400, name
        assert answer.json()["error"]["type"] == "invalid_request_error"
    assert len(responses_server.rejected) == len(bad)
    good = httpx.post(url, json={"model": "m", "input": turn}, timeout=10)
    assert good.status_code == 200
    assert good.json()["output"][0]["content"][0]["text"] == FINAL_TEXT


async def test_responses_model_answers_from_compacted_history(
    tmp_path: Path, responses_server: ResponsesServer
) -> None:
    session = await new_session(tmp_path)
    memory = MnesisAgentsSession(session)
    try:
        for number in range(TURNS):
            await memory.add_items(responses_turn(number))  # type: ignore[arg-type]
        await session.compact()
        assert {"role": "user", "content": PORT_FACT} not in await memory.get_items()

        agent = _agent(responses_server, memory)
        result = await Runner.run(agent, QUESTION, session=memory)
        assert result.final_output == FINAL_TEXT
        streamed = Runner.run_streamed(agent, QUESTION, session=memory)
        kinds = {event.type async for event in streamed.stream_events()}
        assert "raw_response_event" in kinds
        assert streamed.final_output == FINAL_TEXT

        assert responses_server.rejected == []
        assert [b.get("stream") or False for b in responses_server.bodies] == [
            False,
            False,
            True,
            True,
        ]
        last = responses_server.bodies[-1]
        assert last["instructions"] == "You are a coding agent."
        assert any("8443" in output for output in _outputs(last))
        # The fact reached the model only through the tool's output, not the window.
        window = [i for i in last["input"] if i.get("type") != "function_call_output"]
        assert PORT_FACT not in json.dumps(window)
        assert "[LCM summary" in json.dumps(window)
        stored = (await session.conversation_messages())[-3:]
        assert [m.role for m in stored] == ["user", "assistant", "assistant"]
        assert [type(p).__name__ for p in stored[1].parts] == ["ToolPart"]
        assert validate(await memory.get_items(), "responses") == []
    finally:
        await memory.close()
        await session.close()
