"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is one record: ``user`` and ``assistant`` records carry an Anthropic
``message`` whose content blocks are ``text``, ``thinking``, ``tool_use`` (assistant)
and ``tool_result`` (user, paired with the call by ``tool_use_id``); server tools
(``server_tool_use`` / ``mcp_tool_use``) are answered inside the assistant message by a
``*_tool_result`` block. One API message split over several lines (same ``message.id``)
becomes one stored message.

What else is kept: ``system`` records with text (a compaction boundary, a slash
command's echo and output, an API error) become ``system`` messages; ``summary`` and
``custom-title`` records title the session; user records Claude Code wrote itself
(``isMeta`` caveats, ``isCompactSummary``, command echoes) are stored but never taken
for the title. Records with ``isSidechain: true`` are a sub-agent's turns, stored in a
child session; a sub-agent's own file (``<session>/subagents/agent-*.jsonl``, or
``agent-*.jsonl`` next to the session in 2.0) is imported as a child of its parent
transcript's session (see :func:`parent_transcript`).

What is skipped, on purpose: ``progress`` records (a running command's partial output,
hook runs, a sub-agent's messages: each repeats what the tool result or the sub-agent's
own file holds), ``queue-operation`` (prompts typed while the agent worked, delivered as
``user`` records when taken), ``file-history-snapshot`` and other bookkeeping, and
``redacted_thinking`` blocks (no visible text).
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any

from mnesis.importers import records

__all__ = ["ClaudeCodeParser", "default_paths", "parent_transcript", "sub_agent_transcripts"]

_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")


def default_paths() -> list[str]:
    """Every session file under ``~/.claude/projects``, sorted (a session before its
    sub-agents' files)."""
    root = os.path.expanduser("~/.claude/projects")
    return sorted(glob.glob(os.path.join(root, "**", "*.jsonl"), recursive=True))


def sub_agent_transcripts(path: str) -> list[str]:
    """The sub-agent files of the session transcript at ``path``
    (``<session>/subagents/agent-*.jsonl``), sorted."""
    stem = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    return sorted(glob.glob(os.path.join(glob.escape(stem), "subagents", "agent-*.jsonl")))


def _session_id(path: str) -> str | None:
    """The ``sessionId`` of the first records of ``path`` that name one."""
    for value in records.head_records(path):
        if isinstance(value.get("sessionId"), str):
            return str(value["sessionId"])
    return None


def parent_transcript(path: str) -> str | None:
    """The session transcript a sub-agent's file belongs to: ``<dir>/<session>.jsonl``
    for ``<dir>/<session>/subagents/agent-*.jsonl`` (Claude Code 2.1), else
    ``<dir>/<sessionId>.jsonl`` for an ``agent-*.jsonl`` beside it (2.0); None for a file
    that is no sub-agent's."""
    name = os.path.basename(path)
    if not (name.startswith("agent-") and name.endswith(".jsonl")):
        return None
    folder = os.path.dirname(path)
    if os.path.basename(folder) == "subagents":
        return os.path.dirname(folder) + ".jsonl"
    session = _session_id(path)
    if session is None or os.sep in session or session.startswith("agent-"):
        return None
    return os.path.join(folder, session + ".jsonl")


_SKIPPED_TYPES = (
    b'"type":"progress"',
    b'"type":"file-history-snapshot"',
    b'"type":"queue-operation"',
)


def skip_line(raw: bytes) -> bool:
    """Whether the raw line is a record :class:`ClaudeCodeParser` makes nothing of
    (``progress``, ``file-history-snapshot``, ``queue-operation``), told from its bytes
    without decoding it: a real session's ``progress`` records (a running command's
    whole output so far, again and again) can be most of its file. The record's own
    ``type`` is the first ``"type":"`` of a line that opens no object or array before
    it (inside a JSON string a quote is escaped, so the key cannot appear there)."""
    at = raw.find(b'"type":"')
    if at < 0 or not raw.startswith(_SKIPPED_TYPES, at):
        return False
    return raw.find(b"{", 1, at) < 0 and raw.find(b"[", 0, at) < 0


class ClaudeCodeParser(records.ClockedParser):
    """Parses the records of one Claude Code session file."""

    name = "claude-code"
    label = "Claude Code"
    skip_line = staticmethod(skip_line)

    def __init__(self) -> None:
        super().__init__()
        self._meta: tuple[Any, Any] | None = None

    def parse(self, record: Any) -> list[records.ParsedItem]:
        """The items of one line; raises ``ValueError`` for a record of the wrong shape."""
        if not isinstance(record, dict):
            raise ValueError("a Claude Code record must be a JSON object")
        kind = record.get("type")
        if kind == "summary":
            summary = record.get("summary")
            return [records.Meta(title=summary)] if isinstance(summary, str) else []
        if kind == "custom-title":
            title = record.get("customTitle")
            return [records.Meta(chosen_title=title)] if isinstance(title, str) and title else []
        if kind == "system":
            return self._system(record)
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
            items.append(records.Meta(cwd=meta[0], source_id=meta[1]))
        content = message.get("content")
        if kind == "user":
            own = bool(record.get("isMeta") or record.get("isCompactSummary"))
            items.extend(self._user(content, at, sidechain, own))
        else:
            items.extend(self._assistant(message, content, at, sidechain))
        return items

    def _system(self, record: dict[str, Any]) -> list[records.ParsedItem]:
        """A ``system`` record with text (most carry none: durations, hook summaries)."""
        content = record.get("content")
        if not isinstance(content, str) or not content.strip():
            return []
        at = self._clock.at(record.get("timestamp"))
        sidechain = bool(record.get("isSidechain"))
        return [
            records.Turn("system", at, [records.Text(content)], sidechain=sidechain, context=True)
        ]

    def _user(
        self, content: object, at: int, sidechain: bool, own: bool
    ) -> list[records.ParsedItem]:
        if isinstance(content, str):
            context = own or records.is_injected(content)
            return [
                records.Turn(
                    "user", at, [records.Text(content)], sidechain=sidechain, context=context
                )
            ]
        if not isinstance(content, list):
            raise ValueError("user message content must be text or a list of blocks")
        items: list[records.ParsedItem] = []
        texts: list[records.TurnPart] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                items.append(
                    records.ToolResult(
                        call_id=str(block.get("tool_use_id") or ""),
                        output=records.as_text(block.get("content")),
                        created_at=at,
                        is_error=bool(block.get("is_error")),
                        sidechain=sidechain,
                    )
                )
            else:
                text = records.as_text([block])
                if text:
                    texts.append(records.Text(text))
        if texts:
            items.insert(0, records.Turn("user", at, texts, sidechain=sidechain, context=own))
        return items

    def _assistant(
        self, message: dict[str, Any], content: object, at: int, sidechain: bool
    ) -> list[records.ParsedItem]:
        parts: list[records.TurnPart] = []
        results: list[records.ParsedItem] = []
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise ValueError("assistant message content must be text or a list of blocks")
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(records.Text(block["text"]))
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                parts.append(records.Text(block["thinking"], reasoning=True))
            elif kind in _CALLS:
                parts.append(
                    records.tool_call(block.get("id"), block.get("name"), block.get("input"))
                )
            elif isinstance(kind, str) and kind.endswith("_tool_result"):
                results.append(_server_result(block, at, sidechain))
        model = message.get("model")
        stop = message.get("stop_reason")
        turn = records.Turn(
            "assistant",
            at,
            parts,
            model=model if isinstance(model, str) and model != "<synthetic>" else None,
            sidechain=sidechain,
            merge_key=message.get("id") if isinstance(message.get("id"), str) else None,
            finish_reason=stop if isinstance(stop, str) else None,
        )
        return [turn, *results]


def _server_result(block: dict[str, Any], at: int, sidechain: bool) -> records.ToolResult:
    """The result of a server tool (web search, web fetch, code execution, MCP), which
    the API gives inside the assistant message that called it."""
    content = block.get("content")
    failed = isinstance(content, dict) and str(content.get("type", "")).endswith("_error")
    output = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return records.ToolResult(
        call_id=str(block.get("tool_use_id") or ""),
        output=output,
        created_at=at,
        is_error=failed or bool(block.get("is_error")),
        sidechain=sidechain,
    )
