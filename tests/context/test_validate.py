"""``mnesis.context.validate``: each provider rule caught, and every window of long
fuzzed sessions (recorded with ``record_messages``, compacted at 16k, 32k and 200k
windows) valid in all three formats."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.context import ensure_valid, validate
from mnesis.errors import InvalidArgumentError
from mnesis.llm import FakeLLM
from mnesis.store import StorePool


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "f", "input": {}}


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


class TestOpenAIRules:
    def test_a_valid_history(self) -> None:
        messages = [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
            {"role": "assistant", "content": "done"},
        ]
        assert validate(messages, "openai") == []

    @pytest.mark.parametrize(
        ("messages", "problem"),
        [
            ([{"role": "tool", "tool_call_id": "x", "content": ""}], "answers no call"),
            (
                [
                    {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
                    {"role": "user", "content": "next"},
                ],
                "has no tool message before it",
            ),
            (
                [{"role": "assistant", "content": None, "tool_calls": [_call("a")]}],
                "never answered",
            ),
            (
                [
                    {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
                    {"role": "tool", "tool_call_id": "a", "content": ""},
                    {"role": "tool", "tool_call_id": "a", "content": ""},
                ],
                "answers no call",
            ),
            ([{"role": "assistant", "content": None}], "needs content or tool_calls"),
            ([{"role": "robot", "content": "x"}], "unknown role"),
        ],
    )
    def test_each_rule(self, messages: list[dict[str, Any]], problem: str) -> None:
        problems = validate(messages, "openai")
        assert any(problem in p for p in problems), problems

    def test_pending_calls_of_the_last_message_are_allowed_on_request(self) -> None:
        messages = [{"role": "assistant", "content": None, "tool_calls": [_call("a")]}]
        assert validate(messages, "openai", allow_pending=True) == []


class TestAnthropicRules:
    def test_a_valid_body(self) -> None:
        body = {
            "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}, _use("a")]},
                {"role": "user", "content": [_result("a"), {"type": "text", "text": "more"}]},
                {"role": "assistant", "content": "fine"},
            ],
        }
        assert validate(body, "anthropic") == []

    @pytest.mark.parametrize(
        ("messages", "problem"),
        [
            ([{"role": "assistant", "content": "a"}], "first message must be a user"),
            (
                [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
                "two user messages in a row",
            ),
            (
                [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": [_use("a")]},
                    {"role": "user", "content": "no result"},
                ],
                "is not answered by a tool_result in this message",
            ),
            (
                [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": [_use("a")]},
                    {"role": "user", "content": [{"type": "text", "text": "x"}, _result("a")]},
                ],
                "must come first",
            ),
            ([{"role": "user", "content": [_result("z")]}], "answers no tool_use"),
            ([{"role": "user", "content": [{"type": "text", "text": ""}]}], "empty text block"),
            ([{"role": "user", "content": []}], "empty content"),
            (
                [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": [_use("a b")]},
                ],
                "is not [A-Za-z0-9_-]+",
            ),
        ],
    )
    def test_each_rule(self, messages: list[dict[str, Any]], problem: str) -> None:
        problems = validate(messages, "anthropic")
        assert any(problem in p for p in problems), problems

    def test_at_most_four_breakpoints(self) -> None:
        mark = {"cache_control": {"type": "ephemeral"}}
        blocks = [{"type": "text", "text": str(i), **mark} for i in range(4)]
        body = {
            "system": [{"type": "text", "text": "s", **mark}],
            "messages": [{"role": "user", "content": blocks}],
        }
        assert validate(body, "anthropic") == ["cache_control on 5 blocks (at most 4)"]
        body["system"] = "s"
        assert validate(body, "anthropic") == []


class TestResponsesRules:
    def test_each_rule(self) -> None:
        call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
        output = {"type": "function_call_output", "call_id": "c", "output": "ok"}
        reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
        assert (
            validate([{"role": "user", "content": "q"}, reasoning, call, output], "responses") == []
        )
        assert "has no output" in validate([call], "responses")[0]
        assert "answers no earlier function_call" in validate([output], "responses")[0]
        assert "a second output" in validate([call, output, output], "responses")[0]
        assert "without its following item" in validate([reasoning], "responses")[0]
        assert validate([call], "responses", allow_pending=True) == []


def test_ensure_valid_raises_a_typed_error_and_bad_arguments_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="break the openai rules"):
        ensure_valid([{"role": "tool", "tool_call_id": "x", "content": ""}], "openai")
    with pytest.raises(InvalidArgumentError, match="format must be"):
        validate([], "gemini")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="list of dicts"):
        validate("hello", "openai")  # type: ignore[arg-type]


# -- every window of long fuzzed sessions -------------------------------------------


def _turn(rng: random.Random, number: int, output_chars: int) -> list[dict[str, Any]]:
    """One OpenAI-format turn: 0-3 rounds of 1-3 calls (some failing), a final answer."""
    turn: list[dict[str, Any]] = [{"role": "user", "content": f"question {number}: port?"}]
    for round_number in range(rng.choice([0, 1, 1, 2, 3])):
        ids = [f"c{number}_{round_number}_{i}" for i in range(rng.randint(1, 3))]
        content = rng.choice([None, "", f"looking ({round_number})"])
        turn.append(
            {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": "grep", "arguments": json.dumps({"q": i})},
                    }
                    for i in ids
                ],
            }
        )
        for call_id in ids:
            size = rng.randint(0, output_chars)
            text = f"Error: {call_id} failed" if rng.random() < 0.1 else f"{call_id} " + "x" * size
            turn.append({"role": "tool", "tool_call_id": call_id, "content": text})
    turn.append({"role": "assistant", "content": f"answer {number}: port 8443"})
    return turn


async def _fuzz(directory: Path, window: int, turns: int, output_chars: int) -> int:
    """Record ``turns`` turns (some in pieces) and validate every window; returns the
    number of compactions seen."""
    rng = random.Random(window)
    config = MnesisConfig(
        compaction=CompactionConfig(compaction_model="extractive"),
        model_overrides={"context_limit": window, "max_output_tokens": 1_000},
    )
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/fuzz",
        db_path=str(directory / f"w{window}.db"),
        pool=pool,
        llm=FakeLLM(),
        config=config,
        system_prompt="You answer questions.",
    )
    compactions = 0
    try:
        for number in range(turns):
            turn = _turn(rng, number, output_chars)
            cut = rng.randint(1, len(turn)) if rng.random() < 0.3 else len(turn)
            for piece in (turn[:cut], turn[cut:]):
                if not piece:
                    continue
                result = await session.record_messages(piece, format="openai")
                compactions += result.compaction_triggered
                for format in ("openai", "responses"):
                    rendered = await session.context_for_next_turn(format=format)  # type: ignore[call-overload]
                    assert validate(rendered, format, allow_pending=True) == [], (window, number)
                body = await session.context_for_next_turn(format="anthropic", cache_control=True)
                assert validate(body, "anthropic", allow_pending=True) == [], (window, number)
            rendered = await session.context_for_next_turn()
            assert validate(rendered, "openai") == [], (window, number)
        await session.compaction_engine.wait_for_pending()
    finally:
        await session.close()
        await pool.close_all()
    return compactions


@pytest.mark.parametrize(
    ("window", "turns", "output_chars"),
    [(16_000, 40, 1_500), (32_000, 40, 4_000), (200_000, 25, 60_000)],
)
async def test_every_window_of_a_long_session_is_valid(
    tmp_path: Path, window: int, turns: int, output_chars: int
) -> None:
    compactions = await _fuzz(tmp_path, window, turns, output_chars)
    assert compactions > 0, "the session never compacted: the windows were not exercised"
