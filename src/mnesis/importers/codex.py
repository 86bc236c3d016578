"""Codex CLI session transcripts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Current files wrap each item: ``{"timestamp", "type": "response_item", "payload": …}``
next to ``session_meta`` (session ID, working directory) and ``turn_context`` (model)
lines; older files hold the items bare. Items are Responses-API items: ``message``
(user/assistant/developer text), ``reasoning`` (its summary), ``function_call`` /
``custom_tool_call`` and their ``*_output`` (paired by ``call_id``). ``event_msg``
lines repeat what the items say and are skipped.
"""

from __future__ import annotations

import glob
import os
from typing import Any

from mnesis.importers.records import (
    Clock,
    Meta,
    ParsedItem,
    Text,
    ToolResult,
    Turn,
    as_text,
    tool_call,
    tool_input,
)

__all__ = ["CodexParser", "default_paths"]

_ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}


def default_paths() -> list[str]:
    """Every rollout file under ``~/.codex/sessions``, sorted."""
    root = os.path.expanduser("~/.codex/sessions")
    return sorted(glob.glob(os.path.join(root, "**", "rollout-*.jsonl"), recursive=True))


def _output_text(value: object) -> tuple[str, bool]:
    """A function call output: Codex wraps shell output as JSON ``{"output", "metadata"}``."""
    text = as_text(value)
    if isinstance(value, str) and value.startswith("{"):
        decoded = tool_input(value)
        if isinstance(decoded.get("output"), str):
            meta = decoded.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return decoded["output"], isinstance(code, int) and code != 0
    return text, False


class CodexParser:
    """Parses the lines of one Codex rollout file."""

    name = "codex"
    label = "Codex"

    def __init__(self) -> None:
        self._clock = Clock()
        self._model: str | None = None

    def parse(self, record: Any) -> list[ParsedItem]:
        """The items of one line; raises ``ValueError`` for a line of the wrong shape."""
        if not isinstance(record, dict):
            raise ValueError("a Codex line must be a JSON object")
        at = self._clock.at(record.get("timestamp"))
        kind = record.get("type")
        payload = record.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            return [Meta(cwd=payload.get("cwd"), source_id=payload.get("id"))]
        if kind == "turn_context" and isinstance(payload, dict):
            model = payload.get("model")
            if isinstance(model, str):
                self._model = model
                return [Meta(model=model, cwd=payload.get("cwd"))]
            return []
        if kind == "response_item":
            if not isinstance(payload, dict):
                raise ValueError("a response_item line needs a 'payload' object")
            return self._item(payload, at)
        if kind in ("event_msg", "compacted") or "payload" in record:
            return []
        if "instructions" in record and "id" in record:  # the header of an older file
            return [Meta(source_id=str(record["id"]))]
        return self._item(record, at)

    def _item(self, item: dict[str, Any], at: int) -> list[ParsedItem]:
        kind = item.get("type")
        if kind == "message":
            role = _ROLES.get(str(item.get("role")))
            if role is None:
                raise ValueError(f"unknown message role {item.get('role')!r}")
            text = as_text(item.get("content"))
            model = self._model if role == "assistant" else None
            key = "turn" if role == "assistant" else None
            turn = Turn(role, at, [Text(text)], model=model, merge_key=key)  # type: ignore[arg-type]
            return [turn] if text else []
        if kind == "reasoning":
            text = as_text(item.get("summary"))
            turn = Turn("assistant", at, [Text(text, reasoning=True)], merge_key="turn")
            return [turn] if text else []
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            raw = item.get("arguments", item.get("input", item.get("action")))
            call = tool_call(
                item.get("call_id") or item.get("id"), item.get("name"), raw, default_name=kind
            )
            return [Turn("assistant", at, [call], model=self._model, merge_key="turn")]
        if kind in ("function_call_output", "custom_tool_call_output"):
            output, failed = _output_text(item.get("output"))
            return [ToolResult(str(item.get("call_id") or ""), output, at, is_error=failed)]
        return []
