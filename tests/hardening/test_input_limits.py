"""Regressions of issue 17, "untyped errors and a poisoned session": each hostile value
gets a typed error before anything is written, and accepted input never makes a session
unloadable."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool, TokenUsage, ToolPart
from mnesis.config import CompactionConfig
from mnesis.errors import ContextOverflowError, InvalidArgumentError
from mnesis.llm import FakeLLM
from mnesis.models.limits import INT64_MAX
from mnesis.models.parts import ToolStatus
from mnesis.retrieval.tools import run_lcm_tool
from tests.hardening.dump import logical_dump

NO_AUTO = MnesisConfig(compaction=CompactionConfig(auto=False))


@pytest.fixture
async def session(db_path: str, pool: StorePool, fake_llm: FakeLLM) -> AsyncIterator[MnesisSession]:
    s = await MnesisSession.create(
        model="fake/hardening", db_path=db_path, pool=pool, llm=fake_llm, config=NO_AUTO
    )
    await s.record("an earlier question", "an earlier answer")
    yield s
    await s.close()


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def cursor_of(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii")


class TestTokenCounts:
    async def test_two_huge_but_valid_counts_leave_the_session_loadable(
        self, session: MnesisSession, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        for _ in range(2):
            await session.record("q", "a", tokens=TokenUsage(input=2**62))
        await session.close()
        loaded = await MnesisSession.load(session.id, db_path=db_path, pool=pool, llm=fake_llm)
        assert loaded.token_usage.input == INT64_MAX
        await loaded.close()

    def test_a_count_beyond_64_bits_is_refused_by_the_model(self) -> None:
        with pytest.raises(ValueError):
            TokenUsage(input=2**63)

    async def test_a_count_beyond_64_bits_smuggled_past_the_model_is_a_typed_error(
        self, session: MnesisSession, db_path: str
    ) -> None:
        before = logical_dump(db_path)
        tokens = TokenUsage.model_construct(
            input=2**63, output=0, cache_read=0, cache_write=0, total=0
        )
        with pytest.raises(InvalidArgumentError, match=r"tokens\.?.*input"):
            await session.record("q", "a", tokens=tokens)
        assert logical_dump(db_path) == before

    def test_sums_saturate_instead_of_leaving_the_storage_range(self) -> None:
        total = TokenUsage(input=INT64_MAX) + TokenUsage(input=1, output=1)
        assert total.input == INT64_MAX and total.total == INT64_MAX


class TestToolParts:
    @pytest.mark.parametrize(
        "part",
        [
            {
                "type": "tool",
                "tool_name": "t",
                "tool_call_id": "c",
                "status": {"started_at": 2**70},
            },
            ToolPart(
                tool_name="t",
                tool_call_id="c",
                status=ToolStatus.model_construct(
                    state="completed", started_at=2**70, compacted_at=None, completed_at=None
                ),
            ),
        ],
        ids=["dict", "object"],
    )
    async def test_a_timestamp_beyond_64_bits_is_a_typed_error(
        self, session: MnesisSession, db_path: str, part: object
    ) -> None:
        before = logical_dump(db_path)
        with pytest.raises(InvalidArgumentError):
            await session.record("q", [part])  # type: ignore[list-item]
        assert logical_dump(db_path) == before

    @pytest.mark.parametrize("as_dict", [True, False], ids=["dict", "object"])
    async def test_an_input_nested_500_levels_is_a_typed_error(
        self, session: MnesisSession, db_path: str, as_dict: bool
    ) -> None:
        before = logical_dump(db_path)
        part: object = {"type": "tool", "tool_name": "t", "tool_call_id": "c", "input": nested(500)}
        if not as_dict:
            part = ToolPart(tool_name="t", tool_call_id="c", input=nested(500))
        with pytest.raises(InvalidArgumentError, match="deeper than"):
            await session.record("q", [part])  # type: ignore[list-item]
        assert logical_dump(db_path) == before

    async def test_an_input_nested_50_levels_is_stored(self, session: MnesisSession) -> None:
        part = ToolPart(tool_name="t", tool_call_id="c", input=nested(50))
        result = await session.record("q", [part])
        stored = (await session.store.get_message(result.assistant_message_id)).parts[0]
        assert isinstance(stored, ToolPart) and stored.input == nested(50)

    @pytest.mark.parametrize("field", ["tool_name", "tool_call_id"])
    async def test_a_lone_surrogate_in_a_column_is_the_same_typed_error_as_dict_or_object(
        self, session: MnesisSession, db_path: str, field: str
    ) -> None:
        before = logical_dump(db_path)
        values = {"tool_name": "t", "tool_call_id": "c", field: "bad\ud800"}
        messages = []
        for part in ({"type": "tool", **values}, ToolPart(**values)):
            with pytest.raises(InvalidArgumentError) as info:
                await session.record("q", [part])  # type: ignore[list-item]
            messages.append(str(info.value))
        assert messages[0] == messages[1] and field in messages[0]
        assert logical_dump(db_path) == before


class TestCursors:
    @pytest.mark.parametrize(
        "raw",
        [
            b'{"messages": 1000000000000000000000000000000}',
            b'{"tier": -1}',
            b'{"messages": true}',
            b"[" * 200_000,
            b'{"a": [[[[[]]]]]}',
        ],
        ids=["offset 10**30", "negative", "bool", "200k nested", "nested value"],
    )
    async def test_a_forged_cursor_is_a_typed_error(
        self, session: MnesisSession, raw: bytes
    ) -> None:
        with pytest.raises(InvalidArgumentError, match="cursor"):
            await session.grep("answer", cursor=cursor_of(raw))

    async def test_a_nested_cursor_through_execute_tool_is_an_error_in_the_json(
        self, session: MnesisSession
    ) -> None:
        cursor = cursor_of(b"[" * 200_000)
        out = json.loads(await session.execute_tool("lcm_grep", {"query": "x", "cursor": cursor}))
        assert "InvalidArgumentError" in out["error"]

    @pytest.mark.parametrize(
        "arguments",
        ['{"query": ' + "[" * 200_000, {"query": "x", "scope": nested(500)}],
        ids=["text", "dict"],
    )
    async def test_deeply_nested_arguments_are_a_typed_error(
        self, session: MnesisSession, arguments: object
    ) -> None:
        out = json.loads(await session.execute_tool("lcm_grep", arguments))  # type: ignore[arg-type]
        assert "nest deeper" in out["error"]
        with pytest.raises(InvalidArgumentError, match="nest deeper"):
            await run_lcm_tool(session.retrieval, "lcm_grep", arguments)  # type: ignore[arg-type]


class TestOversizedSend:
    async def test_a_message_that_can_never_fit_is_refused_before_it_is_stored(
        self, db_path: str, pool: StorePool, fake_llm: FakeLLM
    ) -> None:
        config = MnesisConfig(
            model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
            compaction=CompactionConfig(auto=False),
        )
        session = await MnesisSession.create(
            model="fake/small", db_path=db_path, pool=pool, llm=fake_llm, config=config
        )
        try:
            before = logical_dump(db_path)
            with pytest.raises(ContextOverflowError):
                await session.send("lorem ipsum dolor sit amet " * 20_000)
            assert logical_dump(db_path) == before
            assert fake_llm.calls == []
            assert (await session.send("a message that fits")).text
        finally:
            await session.close()
