"""Regression tests for issue 27's findings (each fails on the code before it):
``record`` reordered a turn's rounds, and a turn that ended on a tool result made the
README's Anthropic loop send two user turns in a row. Only APIs that existed before are
used, plus ``user=`` (the fix of the second), so these run against the old code too."""

from __future__ import annotations

from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.llm import FakeLLM
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.store import StorePool
from tests.context.wire_checks import check_anthropic, check_openai

EXTRACTIVE = MnesisConfig(compaction=CompactionConfig(compaction_model="extractive", auto=False))


def _tool(call_id: str, name: str, output: str) -> ToolPart:
    return ToolPart(
        tool_name=name,
        tool_call_id=call_id,
        input={"query": "port"},
        output=output,
        status=ToolStatus(state="completed"),
    )


@pytest.fixture
async def session(db_path: str, pool: StorePool) -> Any:
    s = await MnesisSession.create(
        model="fake/rounds", db_path=db_path, pool=pool, llm=FakeLLM(), config=EXTRACTIVE
    )
    yield s
    await s.close()


ISSUE_TURN = [
    _tool("c1", "lcm_grep", "port 8443 in msg_1"),
    TextPart(text="expanding"),
    _tool("c2", "lcm_expand", "the staging server uses 8443"),
    TextPart(text="FINAL"),
]


class TestRecordKeepsTheOrderOfItsParts:
    """Issue 27, finding 1: ``record`` turned sequential rounds into parallel calls with
    the final answer before them."""

    async def test_openai(self, session: MnesisSession) -> None:
        result = await session.record("Which port?", ISSUE_TURN)
        messages = await session.context_for_next_turn()
        assert [(m["role"], m.get("content")) for m in messages[1:]] == [
            ("user", "Which port?"),
            ("assistant", None),
            ("tool", "port 8443 in msg_1"),
            ("assistant", "expanding"),
            ("tool", "the staging server uses 8443"),
            ("assistant", "FINAL"),
        ]
        assert [c["id"] for c in messages[2]["tool_calls"]] == ["c1"]
        assert [c["id"] for c in messages[4]["tool_calls"]] == ["c2"]
        assert len(result.message_ids) == 4
        assert result.assistant_message_id == result.message_ids[-1]
        assert check_openai(messages) is None

    async def test_anthropic(self, session: MnesisSession) -> None:
        await session.record("Which port?", ISSUE_TURN)
        body = await session.context_for_next_turn(format="anthropic")
        shape = [
            (m["role"], [b["type"] for b in m["content"]])
            if isinstance(m["content"], list)
            else (m["role"], m["content"])
            for m in body["messages"]
        ]
        assert shape == [
            ("user", ["text"]),
            ("assistant", ["tool_use"]),
            ("user", ["tool_result"]),
            ("assistant", ["text", "tool_use"]),
            ("user", ["tool_result"]),
            ("assistant", ["text"]),
        ]
        assert body["messages"][5]["content"][0]["text"] == "FINAL"
        assert check_anthropic(body) is None

    async def test_rounds_are_assistant_messages_as_send_stores_them(
        self, session: MnesisSession
    ) -> None:
        result = await session.record("q", ISSUE_TURN, finish_reason="stop")
        stored = await session.messages()
        assert [m.role for m in stored] == ["user", "assistant", "assistant", "assistant"]
        assert [m.message.parent_id for m in stored[1:]] == [result.user_message_id] * 3
        assert [m.message.finish_reason for m in stored[1:]] == ["tool_calls", "tool_calls", "stop"]
        assert [[p.type for p in m.parts] for m in stored[1:]] == [
            ["tool"],
            ["text", "tool"],
            ["text"],
        ]

    async def test_text_then_parallel_calls_stay_one_round(self, session: MnesisSession) -> None:
        await session.record(
            "q", [TextPart(text="two at once"), _tool("a", "x", "1"), _tool("b", "y", "2")]
        )
        messages = await session.context_for_next_turn()
        assert [m["role"] for m in messages[1:]] == ["user", "assistant", "tool", "tool"]
        assert messages[2]["content"] == "two at once"
        assert [c["id"] for c in messages[2]["tool_calls"]] == ["a", "b"]


class TestTheNextUserMessage:
    """Finding 2: the context ended on the tool results' user turn and the caller had no
    way to add the next user message but a second user turn."""

    async def test_anthropic_joins_the_trailing_tool_results(self, session: MnesisSession) -> None:
        done = ToolPart(tool_name="grep", tool_call_id="c1", input={}, output="8443")
        await session.record("Which port?", [TextPart(text="searching"), done])
        body = await session.context_for_next_turn(
            format="anthropic", cache_control=True, user="And the host?"
        )
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["user", "assistant", "user"]
        assert [b["type"] for b in body["messages"][-1]["content"]] == ["tool_result", "text"]
        check_anthropic(body)

    async def test_a_readme_turn_then_the_next_question(self, session: MnesisSession) -> None:
        await session.record("Which port?", ISSUE_TURN)
        body = await session.context_for_next_turn(format="anthropic", user="And the host?")
        check_anthropic(body)
        assert body["messages"][-2]["role"] == "assistant"
        assert body["messages"][-1] == {"role": "user", "content": "And the host?"}
