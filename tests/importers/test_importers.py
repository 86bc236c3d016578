"""Transcript import on hand-written samples of each format: pairing, sidechains,
tolerance, idempotence and growth, on real SQLite files."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnesis.errors import InvalidArgumentError
from mnesis.importers import detect_format, import_file
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import ReasoningPart, TextPart, ToolPart
from mnesis.store import ImmutableStore

SAMPLES = Path(__file__).parent / "samples"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ImmutableStore]:
    opened = await ImmutableStore.open(str(tmp_path / "import.db"))
    yield opened
    await opened.close()


async def _messages(store: ImmutableStore, session_id: str) -> list[MessageWithParts]:
    return await store.get_messages(session_id)


def _tools(messages: list[MessageWithParts]) -> list[ToolPart]:
    return [t for m in messages for t in m.tool_parts]


@pytest.mark.parametrize(
    ("name", "fmt", "messages", "bad_line"),
    [
        ("claude_code.jsonl", "claude-code", 6, 6),
        ("codex_rollout.jsonl", "codex", 2, 9),
        ("openai_chat.jsonl", "openai", 4, 5),
        ("openai_chat.json", "openai", 3, None),
        ("generic.jsonl", "jsonl", 3, 4),
    ],
)
async def test_each_sample_imports_once_and_twice_adds_nothing(
    store: ImmutableStore, name: str, fmt: str, messages: int, bad_line: int | None
) -> None:
    path = str(SAMPLES / name)
    assert detect_format(path) == fmt
    first = await import_file(store, path)
    assert first.format == fmt and first.status == "new"
    assert first.messages_added == messages
    assert [line for line, _ in first.errors] == ([bad_line] if bad_line else [])
    tools = [t for sid in first.session_ids for t in _tools(await _messages(store, sid))]
    assert tools and all(t.output and t.status.state in ("completed", "error") for t in tools)
    second = await import_file(store, path)
    assert second.status == "unchanged" and second.messages_added == 0
    assert sorted(second.session_ids) == sorted(first.session_ids)
    total = sum([await store.count_messages(s) for s in first.session_ids])
    assert total == messages


async def test_claude_code_pairs_tools_merges_split_messages_and_keeps_sidechains(
    store: ImmutableStore,
) -> None:
    report = await import_file(store, str(SAMPLES / "claude_code.jsonl"))
    main_id, side_id = report.session_ids
    main, side = await store.get_session(main_id), await store.get_session(side_id)
    assert main.model == "claude-sonnet-4-5-20250929"
    assert main.title is not None and "/home/ada/parser" in main.title
    assert "Fix the flaky date parser test" in main.title
    assert side.parent_id == main_id and side.agent == "sidechain"
    messages = await _messages(store, main_id)
    assert [m.role for m in messages] == ["user", "assistant", "assistant"]
    split = messages[1]
    assert [type(p) for p in split.parts] == [ReasoningPart, TextPart, ToolPart]
    (bash,) = split.tool_parts
    assert bash.tool_call_id == "toolu_01" and bash.input["command"].startswith("TZ=UTC")
    assert bash.status.state == "error" and "AssertionError" in (bash.output or "")
    assert messages[0].message.created_at == 1748772000000
    (grep,) = _tools(await _messages(store, side_id))
    assert grep.tool_name == "Grep" and "dates.py:42" in (grep.output or "")


async def test_codex_keeps_the_model_reasoning_and_shell_output(store: ImmutableStore) -> None:
    report = await import_file(store, str(SAMPLES / "codex_rollout.jsonl"))
    (session_id,) = report.session_ids
    assert (await store.get_session(session_id)).model == "gpt-5-codex"
    user, assistant = await _messages(store, session_id)
    assert user.text == "Why does npm test hang after the last test?"
    (shell,) = assistant.tool_parts
    assert shell.input["command"][-1] == "npx jest --detectOpenHandles"
    assert (shell.output or "").startswith("Jest has detected")
    assert any(isinstance(p, ReasoningPart) for p in assistant.parts)


async def test_a_grown_file_adds_only_its_new_turns(store: ImmutableStore, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    lines = (SAMPLES / "generic.jsonl").read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]))  # a tool call whose result is not written yet
    first = await import_file(store, str(path))
    (session_id,) = first.session_ids
    (pending,) = _tools(await _messages(store, session_id))
    assert pending.status.state == "running" and pending.output is None
    with path.open("a") as handle:
        handle.write("".join(lines[2:]))
    grown = await import_file(store, str(path))
    assert grown.status == "grown" and grown.messages_added == 1
    assert grown.session_ids == [session_id]
    messages = await _messages(store, session_id)
    assert len(messages) == 3
    (done,) = _tools(messages)
    assert done.status.state == "error" and "foo.h" in (done.output or "")
    assert [line for line, _ in grown.errors] == [4]


async def test_a_rewritten_file_is_imported_as_a_new_session(
    store: ImmutableStore, tmp_path: Path
) -> None:
    path = tmp_path / "chat.jsonl"
    shutil.copy(SAMPLES / "openai_chat.jsonl", path)
    first = await import_file(store, str(path), "openai")
    path.write_text('{"role": "user", "content": "a different conversation"}\n')
    again = await import_file(store, str(path), "openai")
    assert again.status == "restarted" and again.messages_added == 1
    assert again.session_ids != first.session_ids


async def test_an_interrupted_batch_is_neither_lost_nor_repeated(
    store: ImmutableStore, tmp_path: Path
) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(f'{{"role": "user", "content": "turn {i}"}}\n' for i in range(10)))
    first = await import_file(store, str(path), batch_size=3)
    assert first.messages_added == 10
    key = f"{first.format}:{path.resolve()}"
    source = await store.get_import_source(key)
    assert source is not None
    # As if the process died after a batch was written but before its progress was:
    source.byte_offset, source.lines = 0, 0
    source.state["pending"] = {
        "message_id": (await _messages(store, first.session_ids[0]))[-1].id,
        "offset": path.stat().st_size,
        "lines": 10,
    }
    await store.put_import_source(source)
    again = await import_file(store, str(path))
    assert again.status == "unchanged" and again.messages_added == 0
    assert await store.count_messages(first.session_ids[0]) == 10


async def test_unreadable_input_is_a_typed_error(store: ImmutableStore, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="no transcript file"):
        await import_file(store, str(tmp_path / "missing.jsonl"))
    with pytest.raises(InvalidArgumentError, match="unknown format"):
        await import_file(store, str(SAMPLES / "generic.jsonl"), "yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(InvalidArgumentError, match="not a JSON file"):
        await import_file(store, str(broken))
