"""Rendering a built context to the OpenAI and Anthropic wire formats.

Sessions are real (SQLite files, the fake model); every rendered context is checked
the way its provider checks a request (:mod:`tests.context.wire_checks`).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.context import ContextBuilder
from mnesis.context.anthropic import OPENING_PLACEHOLDER
from mnesis.errors import InvalidArgumentError, LLMError
from mnesis.llm import Fail, FakeLLM, Respond, ToolCall
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.models.render import tombstone
from mnesis.store import StorePool
from tests.context.wire_checks import check_anthropic, check_openai

EXTRACTIVE = MnesisConfig(compaction=CompactionConfig(compaction_model="extractive", auto=False))


def tool(call_id: str, state: str = "completed", **kw: Any) -> ToolPart:
    return ToolPart(
        tool_name=kw.pop("name", "bash"),
        tool_call_id=call_id,
        input=kw.pop("input", {"cmd": "ls"}),
        output=kw.pop("output", "a.txt" if state == "completed" else None),
        error_message=kw.pop("error", "boom" if state == "error" else None),
        status=ToolStatus(state=state),  # type: ignore[arg-type]
    )


@pytest.fixture
async def session(db_path: str, pool: StorePool) -> Any:
    s = await MnesisSession.create(
        model="fake/wire",
        db_path=db_path,
        pool=pool,
        llm=FakeLLM(),
        config=EXTRACTIVE,
        system_prompt="Be brief.",
    )
    yield s
    await s.close()


class TestOpenAI:
    async def test_calls_and_results_are_native_messages(self, session: MnesisSession) -> None:
        await session.record("list", [TextPart(text="listing"), tool("c1"), tool("c2", "error")])
        context = await session.context_for_next_turn()
        check_openai(context)
        assert context[2] == {
            "role": "assistant",
            "content": "listing",
            "tool_calls": [
                {
                    "id": c,
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
                }
                for c in ("c1", "c2")
            ],
        }
        assert context[3:] == [
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
            {"role": "tool", "tool_call_id": "c2", "content": "Error: boom"},
        ]

    async def test_a_pending_call_is_sent_only_from_the_last_message(
        self, session: MnesisSession
    ) -> None:
        await session.record("run", [tool("p1", "pending")])
        pending = await session.context_for_next_turn()
        assert pending[-1]["tool_calls"][0]["id"] == "p1"
        check_openai(pending)
        await session.record("never mind", "ok")
        later = await session.context_for_next_turn()
        check_openai(later)
        assert [m["role"] for m in later] == ["system", "user", "user", "assistant"]

    async def test_a_tombstoned_output_is_a_tool_message_with_the_tombstone(
        self, session: MnesisSession
    ) -> None:
        await session.record("read", [tool("c1", output="x" * 500)])
        [message] = [m for m in await session.messages() if m.role == "assistant"]
        part = message.tool_parts[0]
        assert part.id is not None
        await session.store.tombstone_parts([(part.id, 1_700_000_000_000, 5)], [(message.id, 9)])
        context = await session.context_for_next_turn()
        assert context[-1] == {
            "role": "tool",
            "tool_call_id": "c1",
            "content": tombstone("bash", 1_700_000_000_000),
        }

    async def test_a_failed_model_call_leaves_no_empty_assistant_message(
        self, db_path: str, pool: StorePool
    ) -> None:
        llm = FakeLLM().script(Fail("rate limited"))
        session = await MnesisSession.create(model="fake/f", db_path=db_path, pool=pool, llm=llm)
        with pytest.raises(LLMError):
            await session.send("hello")
        for fmt in ("openai", "text"):
            context = await session.context_for_next_turn(format=fmt)  # type: ignore[call-overload]
            assert [m["role"] for m in context] == ["system", "user"]
        await session.send("again")
        assert [m["role"] for m in llm.calls[-1].messages] == ["system", "user", "user"]
        await session.close()

    async def test_reused_call_ids_are_made_unique(self, session: MnesisSession) -> None:
        await session.record("a", [tool("same")])
        await session.record("b", [tool("same")])
        context = await session.context_for_next_turn()
        check_openai(context)
        ids = [m["tool_call_id"] for m in context if m["role"] == "tool"]
        assert ids == ["same", "same_2"]


class TestAnthropic:
    async def test_system_on_top_blocks_and_merged_user_turns(self, session: MnesisSession) -> None:
        await session.record("go", [tool("c/1", "error")])
        await session.record("next", "done")
        body = await session.context_for_next_turn(format="anthropic")
        check_anthropic(body)
        assert body == {
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "c_1", "name": "bash", "input": {"cmd": "ls"}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "c_1",
                            "content": "boom",
                            "is_error": True,
                        },
                        {"type": "text", "text": "next"},
                    ],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            ],
        }

    async def test_cache_control_marks_system_summaries_end_and_last_block(
        self, session: MnesisSession
    ) -> None:
        for i in range(12):
            await session.record(f"question {i} " + "word " * 60, f"answer {i} " + "text " * 60)
        result = await session.compact()
        assert result.level_used > 0
        await session.record("latest", "reply")
        body = await session.context_for_next_turn(format="anthropic", cache_control=True)
        check_anthropic(body)
        assert body["system"] == [
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
        ]
        marked = [
            (i, b["text"][:14])
            for i, m in enumerate(body["messages"])
            for b in m["content"]
            if "cache_control" in b
        ]
        assert marked[0][1] == "[LCM summary s"
        assert marked[-1] == (len(body["messages"]) - 1, "reply")
        plain = await session.context_for_next_turn(format="anthropic")
        assert "cache_control" not in json.dumps(plain)

    async def test_a_view_opening_with_an_assistant_turn_gets_a_user_turn_first(
        self, session: MnesisSession
    ) -> None:
        await session.record("q " * 300, "a1")
        await session.record("q2", "a2")
        builder = ContextBuilder(session.store)
        info = ModelInfo(model_id="tiny", context_limit=60, max_output_tokens=0)
        config = MnesisConfig(compaction=CompactionConfig(compaction_output_budget=0))
        built = await builder.build(session.id, info, "", config)
        body = built.to_anthropic()
        check_anthropic(body)
        assert body["messages"][0]["content"] == [{"type": "text", "text": OPENING_PLACEHOLDER}]


class TestFormatArgument:
    async def test_unknown_formats_and_misplaced_cache_control_are_refused(
        self, session: MnesisSession
    ) -> None:
        with pytest.raises(InvalidArgumentError, match="format"):
            await session.context_for_next_turn(format="gemini")  # type: ignore[call-overload]
        with pytest.raises(InvalidArgumentError, match="cache_control"):
            await session.context_for_next_turn(format="openai", cache_control=True)  # type: ignore[call-overload]

    async def test_without_tool_calls_openai_equals_the_text_rendering(
        self, session: MnesisSession
    ) -> None:
        await session.record("q", "a")
        assert await session.context_for_next_turn() == await session.context_for_next_turn(
            format="text"
        )


# -- property: every rendered context is valid for its provider ------------------------

_states = st.sampled_from(["completed", "error", "pending", "running"])
_op = st.one_of(
    st.tuples(st.just("record"), st.lists(_states, max_size=3), st.integers(0, 400)),
    st.tuples(st.just("complete"), st.booleans()),
    st.tuples(st.just("tombstone"), st.integers(0, 50)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("fail")),
    st.tuples(st.just("call"), st.booleans()),
)


async def _scenario(ops: list[tuple[Any, ...]], directory: str) -> None:
    llm = FakeLLM()
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/prop", db_path=f"{directory}/p.db", pool=pool, llm=llm, config=EXTRACTIVE
    )
    builder = ContextBuilder(session.store)
    counter = 0
    for op in ops:
        kind = op[0]
        if kind == "record":
            parts: list[Any] = [TextPart(text="w " * op[2] + "reply")]
            for state in op[1]:
                counter += 1
                # Finished calls reuse IDs (providers' IDs repeat across turns).
                call_id = f"t{counter % 4}" if state in ("completed", "error") else f"p{counter}"
                parts.append(tool(call_id, state, output="out " * (op[2] // 4)))
            await session.record(f"user {counter}", parts)
        elif kind == "complete":
            pending = [
                p
                for m in await session.messages()
                for p in m.tool_parts
                if p.status.state in ("pending", "running")
            ]
            if pending:
                call = pending[-1]
                error = "failed" if op[1] else None
                await session.complete_tool_call(
                    call.tool_call_id, output=None if error else "ok", error=error
                )
        elif kind == "tombstone":
            done = [
                (m, p)
                for m in await session.messages()
                for p in m.tool_parts
                if p.status.state == "completed" and p.status.compacted_at is None
            ]
            if done:
                message, part = done[op[1] % len(done)]
                assert part.id is not None
                await session.store.tombstone_parts(
                    [(part.id, 1_700_000_000_000, 3)], [(message.id, 9)]
                )
                session._wiring.builder.invalidate()
        elif kind == "compact":
            await session.compact()
        elif kind == "fail":
            llm.script(Fail("down"))
            with pytest.raises(LLMError):
                await session.send("try")
        else:
            name = "lcm_grep" if op[1] else "read_file"
            counter += 1
            llm.script(Respond("", tool_calls=(ToolCall(f"x{counter}", name, {"query": "q"}),)))
            await session.send(
                "use a tool", tools=session.lcm_tool_definitions(), run_lcm_tools=True
            )
        check_openai(await session.context_for_next_turn())
        check_anthropic(await session.context_for_next_turn(format="anthropic"))
        check_anthropic(await session.context_for_next_turn(format="anthropic", cache_control=True))
        for limit in (80, 400):
            info = ModelInfo(model_id="tiny", context_limit=limit, max_output_tokens=0)
            config = MnesisConfig(compaction=CompactionConfig(compaction_output_budget=0))
            try:
                built = await builder.build(session.id, info, "sys", config)
            except Exception as exc:  # the newest message alone may not fit a tiny window
                assert type(exc).__name__ == "ContextOverflowError"
                continue
            check_openai(built.to_openai())
            check_anthropic(built.to_anthropic(cache_control=True))
    await session.close()
    await pool.close_all()


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(_op, min_size=1, max_size=10))
def test_every_rendered_context_is_valid_for_its_provider(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_scenario(ops, directory))


def test_the_checks_reject_an_orphan_result_and_a_split_role() -> None:
    with pytest.raises(AssertionError):
        check_openai(
            [
                {"role": "system", "content": ""},
                {"role": "tool", "tool_call_id": "a", "content": ""},
            ]
        )
    with pytest.raises(AssertionError):
        check_anthropic(
            {
                "system": "",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "a"}]},
                    {"role": "user", "content": [{"type": "text", "text": "b"}]},
                ],
            }
        )
    assert Path(__file__).exists()


class _AnthropicFake(FakeLLM):
    wire_format = "anthropic"


async def test_a_client_declaring_the_anthropic_format_gets_it_in_send(
    db_path: str, pool: StorePool
) -> None:
    llm = _AnthropicFake()
    session = await MnesisSession.create(
        model="fake/a", db_path=db_path, pool=pool, llm=llm, system_prompt="Be brief."
    )
    await session.record("q", [tool("c1")])
    await session.send("next")
    request = llm.calls[0]
    ephemeral = {"type": "ephemeral"}
    assert request.system == [{"type": "text", "text": "Be brief.", "cache_control": ephemeral}]
    check_anthropic({"system": request.system, "messages": request.messages})
    assert [m["role"] for m in request.messages] == ["user", "assistant", "user"]
    await session.close()
