"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is one record: ``user`` and ``assistant`` records carry an Anthropic
``message`` whose content blocks are ``text``, ``thinking``, ``tool_use`` (assistant)
and ``tool_result`` (user, paired with the call by ``tool_use_id``). Records with
``isSidechain: true`` are a sub-agent's turns (stored in a child session), ``summary``
records title the session; other record types (snapshots, queue operations, system
notes) carry no conversation and are skipped. One API message split over several
lines (same ``message.id``) becomes one stored message.
"""

from __future__ import annotations

import glob
import os
from typing import Any

from mnesis.importers import records
from mnesis.importers.records import Clock, Meta, Text, ToolResult, Turn, as_text, tool_call

__all__ = ["ClaudeCodeParser", "default_paths"]


def default_paths() -> list[str]:
    """Every session file under ``~/.claude/projects``, sorted."""
    root = os.path.expanduser("~/.claude/projects")
    return sorted(glob.glob(os.path.join(root, "**", "*.jsonl"), recursive=True))


class ClaudeCodeParser:
    """Parses the records of one Claude Code session file."""

    name = "claude-code"
    label = "Claude Code"

    def __init__(self) -> None:
        self._clock = Clock()
        self._meta: tuple[Any, Any] | None = None

    def parse(self, record: Any) -> list[records.ParsedItem]:
        """The items of one line; raises ``ValueError`` for a record of the wrong shape."""
        if not isinstance(record, dict):
            raise ValueError("a Claude Code record must be a JSON object")
        kind = record.get("type")
        if kind == "summary":
            summary = record.get("summary")
            return [Meta(title=summary)] if isinstance(summary, str) else []
        if kind not in ("user", "assistant"):
            return []
        message = record.get("message")
        if not isinstance(message, dict):
            raise ValueError(f"a {kind} record needs a 'message' object")
        at = self._clock.at(record.get("timestamp"))
        sidechain = bool(record.get("isSidechain"))
        items: list[records.ParsedItem] = []
        meta = (record.get("cwd"), record.get("sessionId"))
        if meta != self._meta:  # the same on nearly every line: given once per change
            self._meta = meta
            items.append(Meta(cwd=meta[0], source_id=meta[1]))
        content = message.get("content")
        if kind == "user":
            items.extend(self._user(content, at, sidechain))
        else:
            items.append(self._assistant(message, content, at, sidechain))
        return items

    def _user(self, content: object, at: int, sidechain: bool) -> list[records.ParsedItem]:
        if isinstance(content, str):
            return [Turn("user", at, [Text(content)], sidechain=sidechain)]
        if not isinstance(content, list):
            raise ValueError("user message content must be text or a list of blocks")
        items: list[records.ParsedItem] = []
        texts: list[records.TurnPart] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                items.append(
                    ToolResult(
                        call_id=str(block.get("tool_use_id") or ""),
                        output=as_text(block.get("content")),
                        created_at=at,
                        is_error=bool(block.get("is_error")),
                        sidechain=sidechain,
                    )
                )
            else:
                text = as_text([block])
                if text:
                    texts.append(Text(text))
        if texts:
            items.insert(0, Turn("user", at, texts, sidechain=sidechain))
        return items

    def _assistant(
        self, message: dict[str, Any], content: object, at: int, sidechain: bool
    ) -> Turn:
        parts: list[records.TurnPart] = []
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise ValueError("assistant message content must be text or a list of blocks")
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(Text(block["text"]))
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                parts.append(Text(block["thinking"], reasoning=True))
            elif kind in ("tool_use", "server_tool_use"):
                parts.append(tool_call(block.get("id"), block.get("name"), block.get("input")))
        model = message.get("model")
        stop = message.get("stop_reason")
        return Turn(
            "assistant",
            at,
            parts,
            model=model if isinstance(model, str) and model != "<synthetic>" else None,
            sidechain=sidechain,
            merge_key=message.get("id") if isinstance(message.get("id"), str) else None,
            finish_reason=stop if isinstance(stop, str) else None,
        )
