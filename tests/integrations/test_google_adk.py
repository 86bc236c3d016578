"""The Google ADK adapter under ADK's own ``Runner`` with an ``LlmAgent`` whose model is
ADK's ``LiteLlm`` pointed at the rejecting OpenAI-compatible server, after 50 turns
appended through the session service with a window small enough to compact; the
memory service searching what compaction hid; deletion on an append-only store."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.models.lite_llm import LiteLlm
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from mnesis.context import validate
from mnesis.errors import InvalidArgumentError
from mnesis.integrations.google_adk import (
    MnesisMemoryService,
    MnesisSessionService,
    event_to_messages,
    lcm_tools,
    messages_to_events,
)
from tests.integrations.scenario import (
    PORT_FACT,
    QUESTION,
    TURNS,
    openai_turn,
    small_window,
    tool_results_sent,
)
from tests.providers.servers import FINAL_TEXT, ProviderServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
APP = "coding"
USER = "ada"


def _service(tmp_path: Path) -> MnesisSessionService:
    return MnesisSessionService(
        model="local/m", db_path=str(tmp_path / "agent.db"), config=small_window()
    )


def _adk_turn(number: int) -> list[Event]:
    """One turn as the events ADK's runner appends: user, call, response, answer."""
    return messages_to_events(
        openai_turn(number),
        invocation_id=f"inv-{number}",
        timestamp=1_000.0 + number,
        default_author="coder",
    )


def _runner(server: ProviderServer, service: MnesisSessionService) -> Runner:
    model = LiteLlm(model="openai/local-m", api_base=server.base_url + "/v1", api_key="sk-local")
    agent = LlmAgent(
        name="coder",
        instruction="You are a coding agent.",
        model=model,
        tools=lcm_tools(service),
    )
    return Runner(
        agent=agent,
        app_name=APP,
        session_service=service,
        memory_service=MnesisMemoryService(service),
    )


def _text(content: Any) -> str:
    return "".join(p.text or "" for p in content.parts or [])


def test_events_convert_both_ways() -> None:
    turn = openai_turn(3)
    events = _adk_turn(3)
    assert [e.author for e in events] == ["user", "coder", "coder", "coder"]
    assert events[1].content.parts[0].function_call.args == {"cmd": "pytest tests/test_module_3.py"}
    back = [m for e in events for m in event_to_messages(e)]
    # A text result is a {"result": text} response in ADK, sent to the model as JSON.
    expected = [{**m, "name": "coder"} if m["role"] == "assistant" else m for m in turn[:2]] + [
        {**turn[2], "content": json.dumps({"result": turn[2]["content"]})},
        {**turn[3], "name": "coder"},
    ]
    assert back == expected
    again = messages_to_events(back, invocation_id="inv", timestamp=1.0)
    assert [e.content for e in again] == [e.content for e in events]
    image = Event(
        author="user",
        content=types.Content(
            role="user",
            parts=[types.Part(inline_data=types.Blob(data=b"x", mime_type="image/png"))],
        ),
    )
    with pytest.raises(InvalidArgumentError, match="not supported yet"):
        event_to_messages(image)


async def test_runner_answers_from_compacted_history(
    tmp_path: Path, openai_server: ProviderServer
) -> None:
    service = _service(tmp_path)
    try:
        session = await service.create_session(app_name=APP, user_id=USER)
        for number in range(TURNS):
            for event in _adk_turn(number):
                await service.append_event(session, event)
        stored = await service.mnesis_session(session)
        await stored.compact()
        loaded = await service.get_session(app_name=APP, user_id=USER, session_id=session.id)
        assert loaded is not None
        texts = [_text(e.content) for e in loaded.events]
        assert PORT_FACT not in texts
        assert any("[LCM summary" in t for t in texts)

        runner = _runner(openai_server, service)
        for _ in range(2):
            question = types.Content(role="user", parts=[types.Part(text=QUESTION)])
            events = [
                e
                async for e in runner.run_async(
                    user_id=USER, session_id=session.id, new_message=question
                )
            ]
            assert _text(events[-1].content) == FINAL_TEXT
        assert openai_server.rejected == []
        last = openai_server.bodies[-1]
        assert last["messages"][0]["content"].startswith("You are a coding agent.")
        assert any("8443" in text for text in tool_results_sent(last))
        assert {"role": "user", "content": PORT_FACT} not in last["messages"]
        # The runner sent the mnesis window: the compacted history as summaries.
        assert any("[LCM summary" in str(m.get("content")) for m in last["messages"])
        # The runner's turns were stored as ordered rounds: question, call + result, answer.
        rounds = (await stored.conversation_messages())[-3:]
        assert [m.role for m in rounds] == ["user", "assistant", "assistant"]
        assert [type(p).__name__ for p in rounds[1].parts] == ["ToolPart"]
        assert validate(await stored.context_for_next_turn(), "openai") == []

        memory = MnesisMemoryService(service)
        found = await memory.search_memory(app_name=APP, user_id=USER, query="deploy port")
        assert any("8443" in _text(m.content) for m in found.memories)
        assert found.memories[0].custom_metadata["mnesis_session_id"] == stored.id
    finally:
        await service.close()


async def test_state_list_and_delete_on_an_append_only_store(tmp_path: Path) -> None:
    service = _service(tmp_path)
    try:
        state = {"lang": "py", "user:name": "Ada", "app:tier": "pro", "temp:x": 1}
        first = await service.create_session(
            app_name=APP, user_id=USER, state=state, session_id="s1"
        )
        assert first.state == {"lang": "py", "user:name": "Ada", "app:tier": "pro"}
        with pytest.raises(AlreadyExistsError):
            await service.create_session(app_name=APP, user_id=USER, session_id="s1")
        second = await service.create_session(app_name=APP, user_id="bob")
        turn = _adk_turn(1)
        event = turn[0]
        event.timestamp = time.time()
        event.actions = EventActions(state_delta={"step": 2, "user:name": "Ada L.", "temp:y": 3})
        for appended in turn:
            await service.append_event(first, appended)
        assert first.state["temp:y"] == 3
        loaded = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
        assert loaded is not None
        assert loaded.state == {"lang": "py", "step": 2, "user:name": "Ada L.", "app:tier": "pro"}
        assert [e.content for e in loaded.events] == [e.content for e in turn]
        assert await service.get_user_state(app_name=APP, user_id=USER) == {"name": "Ada L."}
        none = await service.get_session(
            app_name=APP,
            user_id=USER,
            session_id="s1",
            config=GetSessionConfig(num_recent_events=0),
        )
        assert none is not None and none.events == []

        listed = await service.list_sessions(app_name=APP)
        assert [s.id for s in listed.sessions] == [second.id, "s1"]
        listed_s1, listed_bob = listed.sessions[1], listed.sessions[0]
        assert (listed_s1.user_id, listed_s1.state, listed_s1.events) == (USER, loaded.state, [])
        assert listed_s1.last_update_time == loaded.last_update_time == first.last_update_time
        assert (listed_bob.user_id, listed_bob.state) == ("bob", {"app:tier": "pro"})
        old = (await service.mnesis_session(first)).id

        await service.delete_session(app_name=APP, user_id=USER, session_id="s1")
        assert await service.get_session(app_name=APP, user_id=USER, session_id="s1") is None
        listed = await service.list_sessions(app_name=APP, user_id=USER)
        assert listed.sessions == []
        again = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
        assert (await service.get_session(app_name=APP, user_id=USER, session_id="s1")).events == []
        new = await service.mnesis_session(again)
        assert (await new.store.get_session(new.id)).parent_id == old
        # Nothing was deleted: the old session's history is still found.
        memory = MnesisMemoryService(service)
        found = await memory.search_memory(app_name=APP, user_id=USER, query="module_1")
        assert found.memories
        assert {m.custom_metadata["mnesis_session_id"] for m in found.memories} == {old}
    finally:
        await service.close()


async def test_memory_imports_a_foreign_session_once(tmp_path: Path) -> None:
    service = _service(tmp_path)
    other = InMemorySessionService()
    try:
        session = await other.create_session(app_name=APP, user_id=USER)
        for event in _adk_turn(0) + _adk_turn(1):
            await other.append_event(session, event)
        memory = MnesisMemoryService(service)
        for _ in range(2):
            await memory.add_session_to_memory(session)
        found = await memory.search_memory(app_name=APP, user_id=USER, query="deploy port")
        assert [_text(m.content) for m in found.memories][:1] == [PORT_FACT]
        imported = await service.open_mnesis(found.memories[0].custom_metadata["mnesis_session_id"])
        assert len(await imported.conversation_messages()) == 6
    finally:
        await service.close()
