"""The OpenAI Agents SDK adapter under the SDK's own ``Runner.run``, against the rejecting
OpenAI-compatible server (Chat Completions model), after 50 turns recorded through the
adapter with a window small enough to compact."""

from __future__ import annotations

from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from mnesis.context import validate
from mnesis.integrations.openai_agents import MnesisAgentsSession, lcm_function_tools
from tests.integrations.scenario import (
    PORT_FACT,
    QUESTION,
    TURNS,
    new_session,
    responses_turn,
    tool_results_sent,
)
from tests.providers.servers import FINAL_TEXT, ProviderServer

set_tracing_disabled(True)


def _agent(server: ProviderServer, memory: MnesisAgentsSession) -> Agent:
    client = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-local", max_retries=0)
    return Agent(
        name="coder",
        instructions="You are a coding agent.",
        model=OpenAIChatCompletionsModel(model="local-m", openai_client=client),
        tools=lcm_function_tools(memory),
    )


async def test_runner_answers_from_compacted_history(
    tmp_path: Path, openai_server: ProviderServer
) -> None:
    session = await new_session(tmp_path)
    memory = MnesisAgentsSession(session)
    try:
        for number in range(TURNS):
            await memory.add_items(responses_turn(number))  # type: ignore[arg-type]
        await session.compact()
        items = await memory.get_items()
        assert validate(items, "responses") == []
        assert {"role": "user", "content": PORT_FACT} not in items
        assert any("[LCM summary" in str(item.get("content")) for item in items)

        agent = _agent(openai_server, memory)
        for _ in range(2):
            result = await Runner.run(agent, QUESTION, session=memory)
            assert result.final_output == FINAL_TEXT
        assert openai_server.rejected == []
        last = openai_server.bodies[-1]
        assert any("8443" in text for text in tool_results_sent(last))
        assert {"role": "user", "content": PORT_FACT} not in last["messages"]
        # The runner's turns were stored as ordered rounds: question, call + result, answer.
        stored = (await session.conversation_messages())[-3:]
        assert [m.role for m in stored] == ["user", "assistant", "assistant"]
        assert [type(p).__name__ for p in stored[1].parts] == ["ToolPart"]
        assert validate(await memory.get_items(), "responses") == []
    finally:
        await memory.close()
        await session.close()


async def test_pop_and_clear_move_to_linked_sessions(tmp_path: Path) -> None:
    session = await new_session(tmp_path)
    memory = MnesisAgentsSession(session)
    try:
        await memory.add_items(responses_turn(1) + responses_turn(2))  # type: ignore[arg-type]
        before = await memory.get_items()
        popped = await memory.pop_item()
        assert popped == before[-1]
        assert await memory.get_items() == before[:-1]
        assert memory.session_id != session.id
        assert (await session.store.get_session(memory.session_id)).parent_id == session.id
        assert await memory.get_items(limit=0) == []

        popped_from = memory.session_id
        await memory.clear_session()
        assert await memory.get_items() == []
        assert (await session.store.get_session(memory.session_id)).parent_id == popped_from
        # Nothing was deleted: the first session still holds and finds everything.
        assert await session.context_for_next_turn(format="responses") != []
        assert (await session.grep("module_2")).matches
        await memory.run_compaction({"force": True})
    finally:
        await memory.close()
        await session.close()
