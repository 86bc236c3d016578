"""The LangChain adapter in a LangGraph graph (model node with ``ChatOpenAI``, LangGraph's
``ToolNode``) against the rejecting OpenAI-compatible server, after 50 turns recorded
through the history with a window small enough to compact; the synchronous methods used
inside and outside a running loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from mnesis.context import validate
from mnesis.integrations.langchain import (
    MnesisChatMessageHistory,
    from_openai_messages,
    to_openai_messages,
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


def _graph(server: ProviderServer, history: MnesisChatMessageHistory) -> Any:
    tools = history.tools()
    model = ChatOpenAI(
        model="local-m", base_url=server.base_url + "/v1", api_key="sk-local", max_retries=0
    ).bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        prompt = [SystemMessage("You are a coding agent.")]
        return {"messages": [await model.ainvoke(prompt + state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def test_messages_convert_both_ways() -> None:
    turn = openai_turn(3)
    converted = from_openai_messages(turn)
    assert [type(m) for m in converted] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert to_openai_messages(converted) == turn


def test_sync_methods_outside_a_loop(tmp_path: Path) -> None:
    history = MnesisChatMessageHistory(
        model="local/m", db_path=str(tmp_path / "agent.db"), config=small_window()
    )
    try:
        history.add_messages(from_openai_messages(openai_turn(1)))
        assert to_openai_messages(history.messages) == openai_turn(1)
        first = history.session_id
        history.clear()
        assert history.messages == []
        assert history.session_id != first
        reopened = MnesisChatMessageHistory(first, db_path=str(tmp_path / "agent.db"))
        try:
            assert to_openai_messages(reopened.messages) == openai_turn(1)
        finally:
            reopened.close()
    finally:
        history.close()


async def test_graph_answers_from_compacted_history(
    tmp_path: Path, openai_server: ProviderServer
) -> None:
    history = MnesisChatMessageHistory(
        model="local/m", db_path=str(tmp_path / "agent.db"), config=small_window()
    )
    try:
        for number in range(TURNS):
            if number % 2:  # sync, inside this running loop
                history.add_messages(from_openai_messages(openai_turn(number)))
            else:
                await history.aadd_messages(from_openai_messages(openai_turn(number)))
        await history.acompact()
        window = history.messages
        assert HumanMessage(PORT_FACT) not in window
        assert any("[LCM summary" in str(m.content) for m in window)

        graph = _graph(openai_server, history)
        for _ in range(2):
            before = await history.aget_messages()
            question = HumanMessage(QUESTION)
            state = await graph.ainvoke({"messages": [*before, question]})
            new = state["messages"][len(before) :]
            assert new[-1].content == FINAL_TEXT
            await history.aadd_messages(new)
        assert openai_server.rejected == []
        last = openai_server.bodies[-1]
        assert any("8443" in text for text in tool_results_sent(last))
        assert {"role": "user", "content": PORT_FACT} not in last["messages"]
        window_now = await history.aget_messages()
        assert validate(to_openai_messages(window_now), "openai") == []
        assert window_now[-1].content == FINAL_TEXT
    finally:
        history.close()
