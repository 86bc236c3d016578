"""What an import stored, in a form two imports can be compared by (IDs left out), and
a Claude Code file whose messages are split over several lines."""

from __future__ import annotations

import json
from typing import Any

from mnesis.integrity.checker import IntegrityChecker
from mnesis.store import ImmutableStore
from mnesis.store.base import SearchFilter
from mnesis.store.search_query import SearchQuery, Term

_BASE = {"sessionId": "5e55-split", "cwd": "/home/ada/app", "isSidechain": False}


def _line(kind: str, uuid: str, second: int, message: dict[str, Any], **extra: Any) -> str:
    record = {
        **_BASE,
        **extra,
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2025-06-01T10:00:{second:02d}.000Z",
        "message": message,
    }
    return json.dumps(record) + "\n"


def _assistant(message_id: str, blocks: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
    return {
        "id": message_id,
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": blocks,
        "stop_reason": stop,
    }


def lines() -> list[str]:
    """Two exchanges; each reply is one API message written as three lines (thinking,
    text, tool call), its tool result after it; a sidechain reply is split too."""
    out = []
    for turn, (msg, call) in enumerate((("msg_A", "toolu_A"), ("msg_B", "toolu_B"))):
        at = turn * 10
        out.append(_line("user", f"u{turn}", at, {"role": "user", "content": f"heron {turn}?"}))
        out.append(
            _line(
                "assistant",
                f"a{turn}1",
                at + 1,
                _assistant(msg, [{"type": "thinking", "thinking": f"osprey {turn}"}], None),
            )
        )
        out.append(
            _line(
                "assistant",
                f"a{turn}2",
                at + 2,
                _assistant(msg, [{"type": "text", "text": f"pelican {turn}"}], None),
            )
        )
        tool = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls"}}
        out.append(_line("assistant", f"a{turn}3", at + 3, _assistant(msg, [tool], "tool_use")))
        result = {"type": "tool_result", "tool_use_id": call, "content": f"egret {turn}"}
        out.append(_line("user", f"r{turn}", at + 4, {"role": "user", "content": [result]}))
        side = _assistant(f"side_{turn}", [{"type": "text", "text": f"grebe {turn}"}], None)
        out.append(_line("assistant", f"s{turn}1", at + 5, side, isSidechain=True))
        side = _assistant(f"side_{turn}", [{"type": "text", "text": f"stork {turn}"}], "end_turn")
        out.append(_line("assistant", f"s{turn}2", at + 6, side, isSidechain=True))
    return out


async def shape(store: ImmutableStore, session_ids: list[str]) -> list[Any]:
    """Each session's messages without IDs, and what searching them finds."""
    out: list[Any] = []
    for sid in session_ids:
        for m in await store.get_messages(sid):
            parts = [p.model_dump(exclude={"id"}) for p in m.parts]
            message = m.message
            out.append((message.role, message.created_at, message.finish_reason, parts))
            out.append(message.token_estimate)
        for word in ("osprey", "pelican", "egret", "grebe", "stork", "heron"):
            hits = await store.search_text(
                query=SearchQuery(all_of=(Term.word(word),)),
                scope="messages",
                where=SearchFilter(session_ids=[sid]),
                limit=50,
            )
            out.append(sorted((h.role or "", h.text, h.context or "") for h in hits))
    report = await IntegrityChecker(store, deep=True).run()
    out.append([v.kind for v in report.violations])
    return out
