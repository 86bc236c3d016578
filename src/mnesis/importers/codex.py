"""Codex CLI session transcripts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Current files wrap each item: ``{"timestamp", "type": "response_item", "payload": …}``
next to ``session_meta`` (session ID, working directory, the instructions the session
started with), ``turn_context`` (model), ``event_msg`` and ``compacted`` lines; older
files hold the items bare. Items are Responses-API items: ``message``
(user/assistant/developer text), ``reasoning`` (its summary, or its text when not
encrypted), ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` /
``web_search_call`` and the ``*_output`` that answers a call (paired by ``call_id``).

``event_msg`` lines are what the user saw: ``user_message``, ``agent_message``,
``agent_reasoning`` (and its raw form). Most repeat an item of the same text, some
files hold only the event (a prompt recorded as ``user_message`` alone): each text is
stored once, from whichever of the two comes first (:class:`_Echoes`). A ``compacted``
line's summary and the session's instructions are stored as context. Text Codex itself
put in a user message (the environment, AGENTS.md) is stored but never titles the
session. Other events (token counts, aborted turns, command begin/end echoes of the
tool outputs) carry nothing the items do not.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections import deque
from typing import Any

from mnesis.importers.records import (
    Clock,
    Meta,
    ParsedItem,
    Text,
    ToolResult,
    Turn,
    as_text,
    is_injected,
    tool_call,
    tool_input,
)

__all__ = ["CodexParser", "default_paths"]

_ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}
_EVENTS = {
    "user_message": ("user", "message"),
    "agent_message": ("assistant", "message"),
    "agent_reasoning": ("reasoning", "text"),
    "agent_reasoning_raw_content": ("reasoning", "text"),
}
"""Event type → (what it echoes, the field holding its text)."""
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
_ECHO_WINDOW = 64
"""Unmatched texts remembered per kind: an item and its event are written close
together, so a bounded window finds the pair (and memory stays bounded)."""


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


def _digest(text: str) -> str:
    """A short fingerprint of ``text`` with its whitespace normalised."""
    normal = " ".join(text.split()).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(normal, digest_size=9).hexdigest()


class _Echoes:
    """Texts seen on one side (items or events) and not yet matched by the other, per
    kind (``user``, ``assistant``, ``reasoning``), as fingerprints (they are kept in
    the import's progress, see :meth:`CodexParser.state`)."""

    def __init__(self, state: object = None) -> None:
        self._unmatched: dict[str, deque[str]] = {}
        if isinstance(state, dict):
            for kind, digests in state.items():
                if isinstance(digests, list):
                    self._window(str(kind)).extend(str(d) for d in digests)

    def _window(self, kind: str) -> deque[str]:
        return self._unmatched.setdefault(kind, deque(maxlen=_ECHO_WINDOW))

    def add(self, kind: str, text: str) -> None:
        """Remember ``text`` for the other side to match."""
        self._window(kind).append(_digest(text))

    def take(self, kind: str, text: str) -> bool:
        """Whether ``text`` matches a remembered one (which is then forgotten)."""
        window = self._unmatched.get(kind)
        if not window:
            return False
        digest = _digest(text)
        if digest not in window:
            return False
        window.remove(digest)
        return True

    def state(self) -> dict[str, list[str]]:
        """The remembered fingerprints, per kind."""
        return {kind: list(window) for kind, window in self._unmatched.items() if window}


class CodexParser:
    """Parses the lines of one Codex rollout file."""

    name = "codex"
    label = "Codex"

    def __init__(self) -> None:
        self._clock = Clock()
        self._model: str | None = None
        self._items = _Echoes()
        """Item texts not yet echoed by an event."""
        self._events = _Echoes()
        """Event texts not yet repeated by an item."""

    def state(self) -> dict[str, Any]:
        """The time of the last line, the model, the texts awaiting their echo."""
        return {
            **self._clock.state(),
            "model": self._model,
            "items": self._items.state(),
            "events": self._events.state(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from an earlier import's :meth:`state`."""
        self._clock.restore(state)
        model = state.get("model")
        self._model = model if isinstance(model, str) else None
        self._items = _Echoes(state.get("items"))
        self._events = _Echoes(state.get("events"))

    def parse(self, record: Any) -> list[ParsedItem]:
        """The items of one line; raises ``ValueError`` for a line of the wrong shape."""
        if not isinstance(record, dict):
            raise ValueError("a Codex line must be a JSON object")
        at = self._clock.at(record.get("timestamp"))
        kind = record.get("type")
        payload = record.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            return self._session_meta(payload, at)
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
        if kind == "event_msg":
            return self._event(payload, at) if isinstance(payload, dict) else []
        if kind == "compacted":
            summary = payload.get("message") if isinstance(payload, dict) else None
            if isinstance(summary, str) and summary.strip():
                return [Turn("user", at, [Text(summary)], context=True)]
            return []
        if "payload" in record:
            return []
        if "instructions" in record and "id" in record:  # the header of an older file
            return self._session_meta(record, at)
        return self._item(record, at)

    def _session_meta(self, payload: dict[str, Any], at: int) -> list[ParsedItem]:
        items: list[ParsedItem] = [
            Meta(cwd=payload.get("cwd"), source_id=str(payload.get("id") or "") or None)
        ]
        instructions = payload.get("instructions")
        if isinstance(instructions, str) and instructions.strip():
            items.append(Turn("system", at, [Text(instructions)], context=True))
        return items

    def _event(self, payload: dict[str, Any], at: int) -> list[ParsedItem]:
        """A user-visible event, stored unless an item already gave its text."""
        found = _EVENTS.get(str(payload.get("type")))
        if found is None:
            return []
        kind, field = found
        text = payload.get(field)
        if not isinstance(text, str) or not text.strip() or self._items.take(kind, text):
            return []
        self._events.add(kind, text)
        if kind == "user":
            return [Turn("user", at, [Text(text)], context=is_injected(text))]
        reasoning = kind == "reasoning"
        model = None if reasoning else self._model
        return [Turn("assistant", at, [Text(text, reasoning)], model=model, merge_key="turn")]

    def _fresh(self, kind: str, texts: list[str]) -> list[str]:
        """``texts`` of an item less those an event already gave (the rest are
        remembered for the events that may follow)."""
        fresh = []
        for text in texts:
            if not self._events.take(kind, text):
                self._items.add(kind, text)
                fresh.append(text)
        return fresh

    def _item(self, item: dict[str, Any], at: int) -> list[ParsedItem]:
        kind = item.get("type")
        if kind == "message":
            role = _ROLES.get(str(item.get("role")))
            if role is None:
                raise ValueError(f"unknown message role {item.get('role')!r}")
            text = as_text(item.get("content"))
            if not text or (role != "system" and not self._fresh(role, [text])):
                return []
            model = self._model if role == "assistant" else None
            key = "turn" if role == "assistant" else None
            context = role == "user" and is_injected(text)
            turn = Turn(role, at, [Text(text)], model=model, merge_key=key, context=context)  # type: ignore[arg-type]
            return [turn]
        if kind == "reasoning":
            pieces = [as_text([p]) for p in item.get("summary") or [] if isinstance(p, dict)]
            pieces += [as_text([p]) for p in item.get("content") or [] if isinstance(p, dict)]
            fresh = self._fresh("reasoning", [p for p in pieces if p])
            parts = [Text(text, reasoning=True) for text in fresh]
            return [Turn("assistant", at, list(parts), merge_key="turn")] if parts else []
        if kind in _CALLS or kind == "web_search_call":
            raw = item.get("arguments", item.get("input", item.get("action")))
            call_id = item.get("call_id") or item.get("id")
            call = tool_call(call_id, item.get("name"), raw, default_name=str(kind))
            items: list[ParsedItem] = [
                Turn("assistant", at, [call], model=self._model, merge_key="turn")
            ]
            if kind == "web_search_call":  # answered in place: no output item follows
                status = item.get("status")
                output = json.dumps({"status": status}) if status is not None else ""
                items.append(ToolResult(call.call_id, output, at, is_error=status == "failed"))
            return items
        if kind in _OUTPUTS:
            output, failed = _output_text(item.get("output"))
            return [ToolResult(str(item.get("call_id") or ""), output, at, is_error=failed)]
        return []
