"""The generic JSONL format, for transcripts of any other tool.

One JSON object per line, one file per session::

    {"role": "user", "content": "Why does the build fail?", "timestamp": "2025-06-01T10:00:00Z"}
    {"role": "assistant", "content": "Let me look.", "model": "my-model",
     "tool_calls": [{"id": "c1", "name": "shell", "input": {"command": "make"}}]}
    {"role": "tool", "tool_call_id": "c1", "content": "error: missing header", "is_error": true}
    {"role": "assistant", "content": "The header foo.h is missing."}

``role`` is ``system``, ``user``, ``assistant`` or ``tool``; ``content`` is text (or a
list of ``{"text": …}`` blocks); ``timestamp`` (ISO-8601, Unix seconds or
milliseconds), ``model``, ``tool_calls`` and ``is_error`` are optional. A ``tool``
line answers the call with the same ID.
"""

from __future__ import annotations

from typing import Any

from mnesis.importers import records
from mnesis.importers.records import ClockedParser, ToolResult, Turn, as_text, tool_call

__all__ = ["GenericJsonlParser"]


class GenericJsonlParser(ClockedParser):
    """Parses the generic JSONL format (see the module docstring)."""

    name = "jsonl"
    label = "JSONL"

    def parse(self, record: Any) -> list[records.ParsedItem]:
        """The items of one line; raises ``ValueError`` for a line of the wrong shape."""
        if not isinstance(record, dict):
            raise ValueError("a line must be a JSON object")
        role = record.get("role")
        at = self._clock.at(record.get("timestamp"))
        text = as_text(record.get("content"))
        if role == "tool":
            call_id = record.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise ValueError("a tool line needs a 'tool_call_id'")
            return [ToolResult(call_id, text, at, is_error=bool(record.get("is_error")))]
        if role not in ("system", "user", "assistant"):
            raise ValueError(f"'role' must be system, user, assistant or tool, not {role!r}")
        parts: list[records.TurnPart] = [records.Text(text)] if text else []
        for call in record.get("tool_calls") or []:
            if not isinstance(call, dict) or not call.get("id"):
                raise ValueError("each tool call needs an 'id'")
            parts.append(tool_call(call["id"], call.get("name"), call.get("input")))
        model = record.get("model")
        return [Turn(role, at, parts, model=model if isinstance(model, str) else None)]
