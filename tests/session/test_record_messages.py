"""``record_messages``: a turn recorded in the provider's own shapes, piece by piece as
framework adapters deliver it, checked before anything is written; and
``context_for_next_turn(user=...)``, a request ready to send."""

from __future__ import annotations

from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.context import validate
from mnesis.errors import InvalidArgumentError
from mnesis.llm import FakeLLM
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.store import StorePool

CONFIG = MnesisConfig(compaction=CompactionConfig(compaction_model="extractive", auto=False))


@pytest.fixture
async def session(db_path: str, pool: StorePool) -> Any:
    s = await MnesisSession.create(
        model="fake/rm",
        db_path=db_path,
        pool=pool,
        llm=FakeLLM(),
        config=CONFIG,
        system_prompt="sys",
    )
    yield s
    await s.close()


def _calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            for i in ids
        ],
    }


def _tool(call_id: str, content: str = "out") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


class TestPiecemeal:
    async def test_a_turn_delivered_in_three_calls_is_one_turn(
        self, session: MnesisSession
    ) -> None:
        user = {"role": "user", "content": "Which port?"}
        first = await session.record_messages([user])
        assert first.assistant_message_id == "" and first.message_ids == [first.user_message_id]
        second = await session.record_messages([_calls("a", "b")])
        third = await session.record_messages(
            [_tool("a"), _tool("b", "8443"), {"role": "assistant", "content": "8443"}],
            tokens=TokenUsage(input=10, output=2, total=12),
        )
        assert second.user_message_id == third.user_message_id == first.user_message_id
        expected = [user, _calls("a", "b"), _tool("a"), _tool("b", "8443")]
        expected.append({"role": "assistant", "content": "8443"})
        assert (await session.context_for_next_turn())[1:] == expected
        stored = await session.messages()
        assert [m.message.parent_id for m in stored[1:]] == [first.user_message_id] * 2
        assert stored[-1].message.tokens == TokenUsage(input=10, output=2, total=12)
        assert stored[1].message.finish_reason == "tool_calls"

    async def test_responses_items_after_an_open_round_join_it(
        self, session: MnesisSession
    ) -> None:
        items: list[dict[str, Any]] = [
            {"role": "user", "content": "q"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
        ]
        calls = [
            {"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"}
            for i in (1, 2)
        ]
        outputs = [
            {"type": "function_call_output", "call_id": f"c{i}", "output": "o"} for i in (1, 2)
        ]
        await session.record_messages(items, format="responses")
        await session.record_messages([calls[0]], format="responses")
        await session.record_messages([calls[1], outputs[0]], format="responses")
        await session.record_messages([outputs[1]], format="responses")
        rendered = await session.context_for_next_turn(format="responses")
        assert rendered[1:] == [*items, *calls, *outputs]
        assert len(await session.messages()) == 2  # the user message and one round

    async def test_a_result_for_a_call_of_an_earlier_send_or_record(
        self, session: MnesisSession
    ) -> None:
        pending = ToolPart(
            tool_name="bash", tool_call_id="call_9", input={}, status=ToolStatus(state="pending")
        )
        await session.record("run it", [TextPart(text="running"), pending])
        await session.record_messages(
            [{"type": "function_call_output", "call_id": "call_9", "output": "done"}],
            format="responses",
        )
        messages = await session.context_for_next_turn()
        assert messages[-1] == {"role": "tool", "tool_call_id": "call_9", "content": "done"}


class TestCheckedBeforeAnythingIsWritten:
    @pytest.mark.parametrize(
        ("messages", "format", "match"),
        [
            ([{"role": "system", "content": "x"}], "openai", "system message cannot be recorded"),
            ([{"role": "user", "content": "q"}, _tool("nope")], "openai", "answers no tool call"),
            ([{"role": "user", "content": ""}], "openai", "empty content"),
            (
                [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
                "openai",
                "only text parts",
            ),
            ([{"role": "user", "content": "q"}, _calls("a", "a")], "openai", "duplicate tool call"),
            (
                [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
                "anthropic",
                "two user messages in a row",
            ),
            (
                [{"role": "user", "content": [{"type": "text", "text": ""}]}],
                "anthropic",
                "non-empty text",
            ),
            ([{"type": "web_search_call", "id": "w"}], "responses", "cannot be recorded"),
            ([{"role": "user", "content": "q"}], "gemini", "format must be"),
            ("hello", "openai", "list of openai messages"),
            ([], "openai", "messages is empty"),
        ],
    )
    async def test_bad_messages(
        self, session: MnesisSession, messages: Any, format: str, match: str
    ) -> None:
        await session.record("earlier", "turn")
        with pytest.raises(InvalidArgumentError, match=match):
            await session.record_messages(messages, format=format)  # type: ignore[arg-type]
        assert len(await session.messages()) == 2

    async def test_a_continuation_needs_an_open_turn(self, session: MnesisSession) -> None:
        with pytest.raises(InvalidArgumentError, match="no open turn"):
            await session.record_messages([{"role": "assistant", "content": "hi"}])
        assert await session.messages() == []

    async def test_a_call_answered_twice(self, session: MnesisSession) -> None:
        await session.record_messages([{"role": "user", "content": "q"}, _calls("a"), _tool("a")])
        with pytest.raises(InvalidArgumentError, match="already has its result"):
            await session.record_messages([_tool("a"), {"role": "assistant", "content": "x"}])
        assert len(await session.messages()) == 2


class TestReasoning:
    async def test_is_sent_back_only_in_the_format_it_came_from(
        self, session: MnesisSession
    ) -> None:
        thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
        use = {"type": "tool_use", "id": "t1", "name": "grep", "input": {}}
        messages = [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [thinking, use]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}],
            },
        ]
        await session.record_messages(messages, format="anthropic")
        body = await session.context_for_next_turn(format="anthropic")
        assert body["messages"][1]["content"][0] == thinking
        openai = await session.context_for_next_turn()
        assert openai[2] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            ],
        }
        responses = await session.context_for_next_turn(format="responses")
        assert [i.get("type") for i in responses[2:]] == ["function_call", "function_call_output"]


class TestNextUser:
    """Issue 27, finding 2: a turn that ended on a tool result left the Anthropic
    context on a user turn, and the README loop added a second one."""

    async def test_anthropic_merges_into_the_trailing_tool_results(
        self, session: MnesisSession
    ) -> None:
        done = ToolPart(tool_name="grep", tool_call_id="c1", input={}, output="8443")
        await session.record("Which port?", [TextPart(text="searching"), done])
        body = await session.context_for_next_turn(format="anthropic", user="And the host?")
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["user", "assistant", "user"]
        assert [b["type"] for b in body["messages"][-1]["content"]] == ["tool_result", "text"]
        assert validate(body, "anthropic") == []

    async def test_cache_breakpoints_and_the_later_rendering_match(
        self, session: MnesisSession
    ) -> None:
        await session.record("Which port?", "8443")
        body = await session.context_for_next_turn(
            format="anthropic", cache_control=True, user="And the host?"
        )
        marks = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
        assert marks == [body["messages"][-1]["content"][-1]]
        await session.record_messages(
            [{"role": "user", "content": "And the host?"}, {"role": "assistant", "content": "h"}],
            format="anthropic",
        )
        later = await session.context_for_next_turn(format="anthropic", cache_control=True)
        sent = body["messages"][-1]["content"][-1]
        assert sent.pop("cache_control") == {"type": "ephemeral"}
        assert later["messages"][2]["content"][0] == sent  # the same block, unmarked

    @pytest.mark.parametrize("format", ["openai", "responses"])
    async def test_openai_formats_append_a_user_message(
        self, session: MnesisSession, format: str
    ) -> None:
        await session.record("q", "a")
        messages = await session.context_for_next_turn(format=format, user="next")  # type: ignore[call-overload]
        assert messages[-1] == {"role": "user", "content": "next"}
        assert validate(messages, format) == []  # type: ignore[arg-type]

    async def test_bad_user(self, session: MnesisSession) -> None:
        with pytest.raises(InvalidArgumentError, match="user must be"):
            await session.context_for_next_turn(user="  ")
        with pytest.raises(InvalidArgumentError, match="user= applies"):
            await session.context_for_next_turn(format="text", user="x")
