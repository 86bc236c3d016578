"""``record_messages`` stores provider messages that ``context_for_next_turn`` gives back
exactly: a hypothesis round trip per format (multi-round tool use, parallel calls,
errors, empty text, reasoning), on real SQLite files."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.context import validate
from mnesis.llm import FakeLLM
from mnesis.store import StorePool

EXTRACTIVE = MnesisConfig(compaction=CompactionConfig(compaction_model="extractive", auto=False))


# -- record_messages: the round trip per format ------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
_word = st.text("abcdefghij klm", min_size=1, max_size=12).filter(lambda s: s.strip() != "")
_args = st.dictionaries(st.sampled_from(["q", "path", "n"]), st.integers(0, 9) | _word, max_size=2)


class _Ids:
    def __init__(self) -> None:
        self.n = 0

    def next(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


@st.composite
def _openai_turn(draw: st.DrawFn, ids: _Ids, keep_result_fields: bool) -> list[dict[str, Any]]:
    user: dict[str, Any] = {"role": "user", "content": draw(_word)}
    if draw(st.booleans()):
        user["content"] = [
            {"type": "text", "text": draw(_word)} for _ in range(draw(st.integers(1, 2)))
        ]
    turn = [user]
    for _ in range(draw(st.integers(0, 3))):
        calls = []
        for _ in range(draw(st.integers(1, 3))):
            args = draw(_args)
            raw = json.dumps(args, indent=draw(st.sampled_from([None, 1])), ensure_ascii=False)
            calls.append(
                {
                    "id": ids.next("call_"),
                    "type": "function",
                    "function": {"name": draw(st.sampled_from(["grep", "read"])), "arguments": raw},
                }
            )
        content = draw(st.sampled_from([None, "", "let me look"]))
        assistant: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
        if draw(st.booleans()):
            assistant["refusal"] = None
        turn.append(assistant)
        for call in calls:
            result: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": draw(st.sampled_from(["", "Error: no such file"]) | _text),
            }
            if keep_result_fields and draw(st.booleans()):
                result["name"] = call["function"]["name"]
            turn.append(result)
    if draw(st.booleans()) or len(turn) == 1:
        turn.append({"role": "assistant", "content": draw(st.sampled_from(["", "done"]) | _text)})
    return turn


@st.composite
def _anthropic_turn(draw: st.DrawFn, ids: _Ids, keep_result_fields: bool) -> list[dict[str, Any]]:
    user_text = draw(_word)
    user: dict[str, Any] = {"role": "user", "content": user_text}
    if draw(st.booleans()):
        user["content"] = [{"type": "text", "text": user_text}]
    turn = [user]
    for _ in range(draw(st.integers(0, 3))):
        blocks: list[dict[str, Any]] = []
        if draw(st.booleans()):
            blocks.append(
                {"type": "thinking", "thinking": draw(_text), "signature": "sig" + draw(_word)}
            )
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": draw(_word)})
        uses = [
            {"type": "tool_use", "id": ids.next("toolu_"), "name": "grep", "input": draw(_args)}
            for _ in range(draw(st.integers(1, 3)))
        ]
        turn.append({"role": "assistant", "content": blocks + uses})
        results = []
        for use in uses:
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": use["id"]}
            shape = draw(st.sampled_from(["str", "error", "none", "list", "empty"]))
            if shape == "str":
                result["content"] = draw(_word)
            elif shape == "error":
                result["content"], result["is_error"] = "boom: " + draw(_text), True
            elif keep_result_fields and shape == "list":
                result["content"] = [{"type": "text", "text": draw(_word)}]
            elif keep_result_fields and shape == "empty":
                result["content"], result["is_error"] = "", False
            results.append(result)
        turn.append({"role": "user", "content": results})
    final = draw(st.sampled_from(["blocks", "str", "none"])) if len(turn) > 1 else "str"
    if final == "blocks":
        thinking = {"type": "redacted_thinking", "data": draw(_word)}
        blocks = ([thinking] if draw(st.booleans()) else []) + [
            {"type": "text", "text": draw(_word)}
        ]
        turn.append({"role": "assistant", "content": blocks})
    elif final == "str":
        turn.append({"role": "assistant", "content": draw(_word)})
    return turn


@st.composite
def _responses_turn(draw: st.DrawFn, ids: _Ids, keep_result_fields: bool) -> list[dict[str, Any]]:
    text = draw(_word)
    user: dict[str, Any] = {"role": "user", "content": text}
    if draw(st.booleans()):
        user = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
    turn = [user]

    def reasoning() -> list[dict[str, Any]]:
        if not draw(st.booleans()):
            return []
        summary = [{"type": "summary_text", "text": draw(_text)}] if draw(st.booleans()) else []
        return [
            {
                "type": "reasoning",
                "id": ids.next("rs_"),
                "summary": summary,
                "encrypted_content": "enc" + draw(_word),
            }
        ]

    for _ in range(draw(st.integers(0, 3))):
        turn += reasoning()
        calls = []
        for _ in range(draw(st.integers(1, 3))):
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": ids.next("call_"),
                "name": "grep",
                "arguments": json.dumps(draw(_args)),
            }
            if draw(st.booleans()):
                call.update(id=ids.next("fc_"), status="completed")
            calls.append(call)
        turn += calls
        for call in calls:
            output: dict[str, Any] = {
                "type": "function_call_output",
                "call_id": call["call_id"],
                "output": draw(st.sampled_from(["", "Error: x"]) | _text),
            }
            if keep_result_fields and draw(st.booleans()):
                output["status"] = "completed"
            turn.append(output)
    if draw(st.booleans()) or len(turn) == 1:
        turn += reasoning()
        turn.append(
            {
                "type": "message",
                "role": "assistant",
                "id": ids.next("msg_"),
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": draw(_text), "annotations": []}
                    for _ in range(draw(st.integers(1, 2)))
                ],
            }
        )
    return turn


_TURNS = {"openai": _openai_turn, "anthropic": _anthropic_turn, "responses": _responses_turn}


@st.composite
def _session_script(draw: st.DrawFn, format: str) -> tuple[list[list[dict[str, Any]]], bool]:
    """Turns of one session, and whether each turn is recorded in pieces (then the
    results' own extra fields are left out: a result recorded after its call keeps only
    its content)."""
    ids = _Ids()
    split = draw(st.booleans())
    make = _TURNS[format]
    turns = [draw(make(ids, not split)) for _ in range(draw(st.integers(1, 3)))]
    if format == "anthropic":
        # A turn that ended on tool results: the next user text joins that user message.
        for index in range(len(turns) - 1):
            last = turns[index][-1]
            if last["role"] == "user":
                head = turns[index + 1].pop(0)
                content = head["content"]
                blocks = (
                    [{"type": "text", "text": content}] if isinstance(content, str) else content
                )
                last["content"] = last["content"] + blocks
    return turns, split


async def _round_trip(
    format: str, turns: list[list[dict[str, Any]]], split: bool, directory: str
) -> None:
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/rt",
        db_path=str(Path(directory) / "rt.db"),
        pool=pool,
        llm=FakeLLM(),
        config=EXTRACTIVE,
        system_prompt="sys",
    )
    try:
        recorded: list[dict[str, Any]] = []
        for turn in turns:
            pieces = [turn[i : i + 2] for i in range(0, len(turn), 2)] if split else [turn]
            for piece in pieces:
                await session.record_messages(json.loads(json.dumps(piece)), format=format)  # type: ignore[arg-type]
            recorded += turn
        rendered = await session.context_for_next_turn(format=format)  # type: ignore[call-overload]
        body = rendered["messages"] if format == "anthropic" else rendered[1:]
        assert body == recorded
        assert validate(rendered, format) == []  # type: ignore[arg-type]
    finally:
        await session.close()
        await pool.close_all()


_SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@_SETTINGS
@given(_session_script("openai"))
def test_openai_chat_messages_come_back_exactly(script: tuple[list[Any], bool]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_round_trip("openai", *script, directory))


@_SETTINGS
@given(_session_script("anthropic"))
def test_anthropic_messages_come_back_exactly(script: tuple[list[Any], bool]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_round_trip("anthropic", *script, directory))


@_SETTINGS
@given(_session_script("responses"))
def test_responses_items_come_back_exactly(script: tuple[list[Any], bool]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_round_trip("responses", *script, directory))
