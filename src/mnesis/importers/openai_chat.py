"""OpenAI chat-completions transcripts, as JSONL or JSON.

A JSONL line is either one chat message (``{"role", "content", "tool_calls"?,
"tool_call_id"?}``; the file is one session) or a whole conversation
(``{"messages": [...]}``, the fine-tuning format; each line is its own session). A
``.json`` file holds a list of messages, a ``{"messages": [...]}`` object or a list
of such objects (it is read whole: use JSONL for large histories). Assistant
``tool_calls`` are paired with the ``tool`` messages that answer them by ID (a legacy
``function_call`` with the next ``function`` message of its name); an assistant's
``refusal`` and ``reasoning_content`` are kept as text and reasoning.
"""

from __future__ import annotations

from typing import Any

from mnesis.importers import records
from mnesis.importers.records import Clock, ToolResult, Turn, as_text, tool_call

__all__ = ["OpenAIChatParser"]

_ROLES = ("system", "user", "assistant", "developer")


class OpenAIChatParser:
    """Parses chat-completions messages (one per line, or conversations per line)."""

    name = "openai"
    label = "OpenAI chat"

    def __init__(self) -> None:
        self._clock = Clock()
        self._conversations = 0
        self._calls = 0
        self._legacy: dict[str, str] = {}
        """Function name → the ID given to its open legacy ``function_call``."""

    def state(self) -> dict[str, Any]:
        """The time of the last line, the conversations and calls counted, the open
        legacy function calls."""
        return {
            **self._clock.state(),
            "conversations": self._conversations,
            "calls": self._calls,
            "legacy": dict(self._legacy),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from an earlier import's :meth:`state`."""
        self._clock.restore(state)
        for name in ("conversations", "calls"):
            value = state.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(self, f"_{name}", value)
        legacy = state.get("legacy")
        if isinstance(legacy, dict):
            self._legacy = {str(k): str(v) for k, v in legacy.items()}

    def parse(self, record: Any) -> list[records.ParsedItem]:
        """The items of one line; raises ``ValueError`` for a line of the wrong shape."""
        if isinstance(record, dict) and isinstance(record.get("messages"), list):
            self._conversations += 1
            key = f"conversation-{self._conversations}"
            model = record.get("model") if isinstance(record.get("model"), str) else None
            items: list[records.ParsedItem] = []
            for message in record["messages"]:
                items.extend(self.message(message, key, model))
            return items
        return self.message(record, None, None)

    def message(self, message: Any, key: str | None, model: str | None) -> list[records.ParsedItem]:
        """The items of one chat message."""
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ValueError("a chat message must be an object with a 'role'")
        role = message["role"]
        at = self._clock.at(message.get("created_at", message.get("timestamp")))
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise ValueError("a tool message needs a 'tool_call_id'")
            output = as_text(message.get("content"))
            return [ToolResult(call_id, output, at, session_key=key)]
        if role == "function":  # the legacy answer to a ``function_call``, by name
            name = message.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError("a function message needs a 'name'")
            output = as_text(message.get("content"))
            return [ToolResult(self._legacy.pop(name, name), output, at, session_key=key)]
        if role not in _ROLES:
            raise ValueError(f"unknown role {role!r}")
        parts: list[records.TurnPart] = []
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            parts.append(records.Text(reasoning, reasoning=True))
        text = as_text(message.get("content"))
        if text:
            parts.append(records.Text(text))
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            parts.append(records.Text(refusal))
        legacy = message.get("function_call")
        if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
            self._calls += 1
            call_id = f"function-call-{self._calls}"
            self._legacy[legacy["name"]] = call_id
            parts.append(tool_call(call_id, legacy["name"], legacy.get("arguments")))
        for call in message.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            raw = call.get("function")
            function: dict[str, Any] = raw if isinstance(raw, dict) else {}
            parts.append(tool_call(call.get("id"), function.get("name"), function.get("arguments")))
        own_model = message.get("model")
        return [
            Turn(
                "system" if role == "developer" else role,
                at,
                parts,
                model=own_model if isinstance(own_model, str) else model,
                session_key=key,
            )
        ]
