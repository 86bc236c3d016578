"""The fixture corpus (``samples/corpus``: every record type the public descriptions of
the Claude Code transcript and Codex rollout formats document, and every text field of
OpenAI chat messages) imported whole: each text-bearing record of the input is found in
the output, each once where the format writes it twice (Codex items and their events);
sub-agent files linked to their parent session and purged with it; empty files skipped;
a second import adds nothing.

Which records bear text is decided here, from the formats, not from the importers: a
record type the corpus holds must be either counted or named as skipped on purpose
(:data:`SKIPPED`), so a new type cannot pass unnoticed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mnesis.importers import import_file
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import ReasoningPart, TextPart, ToolPart
from mnesis.store import ImmutableStore

CORPUS = Path(__file__).parent / "samples" / "corpus"

SKIPPED = {
    "claude-code": {
        "progress",  # partial output, hook runs, sub-agent echoes: in the results / agent files
        "queue-operation",  # typed while busy; delivered as a user record when taken
        "file-history-snapshot",
        "system:turn_duration",
        "assistant:redacted_thinking",  # no visible text
    },
    "codex": {
        "turn_context",
        "session_meta",  # counted when it holds instructions
        "response_item:ghost_snapshot",
        "event_msg:task_started",
        "event_msg:task_complete",  # repeats the last agent message
        "event_msg:token_count",
        "event_msg:exec_command_end",  # repeats the call's output item
        "event_msg:turn_aborted",
        "event_msg:context_compacted",  # the summary is the compacted line
    },
}


def _claude_code(record: dict[str, Any]) -> tuple[str, list[str]]:
    kind = str(record.get("type"))
    if kind == "summary":
        return kind, [record["summary"]]
    if kind == "custom-title":
        return kind, [record["customTitle"]]
    if kind == "system":
        content = record.get("content")
        return f"system:{record.get('subtype')}", [content] if content else []
    if kind not in ("user", "assistant"):
        return kind, []
    content = record["message"]["content"]
    if isinstance(content, str):
        return kind, [content]
    texts: list[str] = []
    for block in content:
        btype = block["type"]
        if btype == "text":
            texts.append(block["text"])
        elif btype == "thinking":
            texts.append(block["thinking"])
        elif btype in ("tool_use", "server_tool_use"):
            texts += [v for v in block["input"].values() if isinstance(v, str)]
        elif btype == "tool_result":
            inner = block["content"]
            texts += [inner] if isinstance(inner, str) else [b["text"] for b in inner]
        elif btype.endswith("_tool_result"):
            texts += [r["title"] for r in block["content"]]
        elif not texts:
            kind = f"{kind}:{btype}"
    return kind, texts


def _codex(record: dict[str, Any]) -> tuple[str, list[str]]:
    kind = str(record.get("type"))
    payload = record.get("payload", record)
    if kind == "session_meta" or "instructions" in record:
        return "session_meta", [payload["instructions"]] if payload.get("instructions") else []
    if kind == "compacted":
        return kind, [payload["message"]]
    if kind == "turn_context":
        return kind, []
    ptype = payload.get("type")
    name = f"{kind}:{ptype}" if "payload" in record else f"item:{ptype}"
    if kind == "event_msg":
        text = payload.get("message") or payload.get("text")
        counted = ("user_message", "agent_message", "agent_reasoning")
        return name, [text] if ptype in counted else []
    if ptype == "message":
        return name, [c["text"] for c in payload["content"]]
    if ptype == "reasoning":
        return name, [s["text"] for s in (payload["summary"] or []) + (payload["content"] or [])]
    if ptype == "function_call":
        return name, list(_leaves(json.loads(payload["arguments"])))
    if ptype == "custom_tool_call":
        return name, [payload["input"]]
    if ptype == "local_shell_call":
        return name, payload["action"]["command"]
    if ptype == "web_search_call":
        return name, [payload["action"]["query"]]
    if ptype and ptype.endswith("_output"):
        output = payload["output"]
        inner = json.loads(output)["output"] if output.startswith("{") else output
        return name, [inner]
    return name, []


def _leaves(value: Any) -> Iterator[str]:
    """The strings inside a decoded JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


def _openai(record: dict[str, Any]) -> tuple[str, list[str]]:
    texts = []
    content = record.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        texts += [c["text"] for c in content if c["type"] == "text"]
    for field in ("reasoning_content", "refusal"):
        if record.get(field):
            texts.append(record[field])
    for call in record.get("tool_calls") or []:
        texts += _leaves(json.loads(call["function"]["arguments"]))
    if record.get("function_call"):
        texts += _leaves(json.loads(record["function_call"]["arguments"]))
    return str(record["role"]), texts


ORACLES = {"claude-code": _claude_code, "codex": _codex, "openai": _openai}


def _text(message: MessageWithParts) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def _records(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text().splitlines():
        if line.strip():
            yield json.loads(line)


def _normal(text: str) -> str:
    return " ".join(text.split())


async def _haystack(store: ImmutableStore, session_ids: list[str]) -> list[str]:
    """Every text the sessions hold: titles, text and reasoning, tool inputs and outputs."""
    found: list[str] = []
    for session_id in session_ids:
        session = await store.get_session(session_id)
        found.append(session.title or "")
        for message in await store.get_messages(session_id):
            for part in message.parts:
                if isinstance(part, (TextPart, ReasoningPart)):
                    found.append(part.text)
                elif isinstance(part, ToolPart):
                    found += [json.dumps(part.input, ensure_ascii=False), part.output or ""]
                    found += [v for v in part.input.values() if isinstance(v, str)]
    return [_normal(t) for t in found]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ImmutableStore]:
    opened = await ImmutableStore.open(str(tmp_path / "corpus.db"))
    yield opened
    await opened.close()


def _files(fmt: str) -> list[Path]:
    return sorted(p for p in (CORPUS / fmt).rglob("*.jsonl") if p.stat().st_size)


@pytest.mark.parametrize("fmt", sorted(ORACLES))
async def test_every_text_bearing_record_of_the_corpus_is_imported(
    store: ImmutableStore, fmt: str
) -> None:
    counted = seen = 0
    for path in _files(fmt):
        report = await import_file(store, str(path))
        assert report.format == fmt and not report.errors, path
        sessions = report.session_ids
        haystack = await _haystack(store, sessions)
        for record in _records(path):
            kind, texts = ORACLES[fmt](record)
            if not texts:
                assert kind in SKIPPED.get(fmt, ()) or fmt == "openai", (path.name, kind)
                continue
            counted += 1
            missing = [t for t in texts if not any(_normal(t) in h for h in haystack)]
            assert not missing, (path.name, kind, missing)
            seen += 1
    assert counted == seen and counted >= {"claude-code": 30, "codex": 30, "openai": 7}[fmt]


async def test_codex_texts_written_twice_are_stored_once(store: ImmutableStore) -> None:
    """A prompt, a reply and reasoning come as an item and as an event, in either order;
    a prompt that exists only as an event is still stored."""
    paths = _files("codex")
    events_only = next(p for p in paths if "019e1695" in p.name)
    report = await import_file(store, str(events_only))
    (session_id,) = report.session_ids
    messages = await store.get_messages(session_id)
    users = [_text(m) for m in messages if m.role == "user"]
    prompt = "Add a --dry-run flag to the sync command that prints what would change."
    assert users.count(prompt) == 1 and users.count("Also document it in the README.") == 1
    session = await store.get_session(session_id)
    assert session.title is not None and "--dry-run flag" in session.title
    assert "AGENTS.md" not in session.title and "environment_context" not in session.title
    assert "Documented --dry-run in the README's sync section." in [
        _text(m) for m in messages if m.role == "assistant"
    ]
    texts = [p.text for m in messages for p in m.parts if isinstance(p, (TextPart, ReasoningPart))]
    for text in ("**Locating the sync command** in the CLI package.", prompt):
        assert texts.count(text) == 1, text

    both = next(p for p in paths if "0199f0aa" in p.name)
    report = await import_file(store, str(both))
    messages = await store.get_messages(report.session_ids[0])
    texts = [p.text for m in messages for p in m.parts if isinstance(p, (TextPart, ReasoningPart))]
    assert texts.count("Which endpoint is slow in the latency dashboard?") == 1
    assert texts.count("**Comparing p99 by route**") == 1
    assert texts.count("/orders is slow: p99 2.4 s, from an N+1 query on order lines.") == 1
    assert texts.count("Yes") == 2  # two prompts, each written twice
    session = await store.get_session(report.session_ids[0])
    assert session.title is not None and "Which endpoint is slow" in session.title


async def test_sub_agent_files_are_children_of_their_session_and_purged_with_it(
    store: ImmutableStore,
) -> None:
    shop = CORPUS / "claude-code" / "-home-ada-shop"
    (sub,) = (shop).rglob("agent-*.jsonl")
    child = await import_file(store, str(sub))  # before its parent: the parent comes first
    parent = await import_file(store, str(next(shop.glob("*.jsonl"))))
    assert parent.status == "unchanged" and child.parent_id == parent.session_ids[0]
    child_session = await store.get_session(child.session_ids[0])
    assert child_session.parent_id == parent.session_ids[0]
    assert child_session.agent == "sidechain" and "sub-agent" in (child_session.title or "")
    main = await store.get_session(parent.session_ids[0])
    assert main.title is not None and "VAT" in main.title and "Caveat" not in main.title

    blog = CORPUS / "claude-code" / "-home-ada-blog"  # the 2.0 layout: agent file beside
    old_child = await import_file(store, str(blog / "agent-5d2e9f10.jsonl"))
    old_parent = await import_file(store, str(next(blog.glob("9c8d*.jsonl"))))
    assert old_child.parent_id == old_parent.session_ids[0]

    purged = await store.purge_session(parent.session_ids[0])
    assert set(purged.session_ids) == {parent.session_ids[0], child.session_ids[0]}
    again = await import_file(store, str(sub))  # purged with its parent: imported anew
    assert again.status == "new" and again.parent_id not in (None, parent.session_ids[0])


async def test_empty_files_are_skipped_with_a_note(store: ImmutableStore) -> None:
    blog = CORPUS / "claude-code" / "-home-ada-blog"
    for name in ("0e4a1f2b-empty.jsonl", "7a7a7a7a-snapshots-only.jsonl"):
        report = await import_file(store, str(blog / name))
        assert report.status == "empty" and report.session_ids == [] and report.notes
    assert await store.list_sessions() == []


async def test_reimporting_the_corpus_adds_nothing(store: ImmutableStore) -> None:
    for fmt in ORACLES:
        for path in _files(fmt):
            await import_file(store, str(path))
    before = [(s.id, await store.count_messages(s.id)) for s in await store.list_sessions()]
    for fmt in ORACLES:
        for path in _files(fmt):
            report = await import_file(store, str(path))
            assert report.messages_added == 0, path
            assert report.status in ("unchanged", "empty"), path
    after = [(s.id, await store.count_messages(s.id)) for s in await store.list_sessions()]
    assert after == before
