"""OpenAI Chat Completions messages into stored rounds (see :mod:`mnesis.context.intake`).

``user`` messages start a turn; each ``assistant`` message is one round (its text, then
its ``tool_calls``); each ``tool`` message is the result of a call of the batch or, in a
continuation, of a call recorded earlier. Text content only: a string or a list of
``{"type": "text"}`` parts. ``system`` / ``developer`` messages are refused (the system
prompt is the session's, or the one given to ``context_for_next_turn``).
"""

from __future__ import annotations

from typing import Any

from mnesis.context.intake import Intake, IntakeMessage, Pairing, put_wire, reject
from mnesis.models.parts import MessagePart, TextPart, ToolPart, WireFields

__all__ = ["parse_openai"]

_FORMAT = "openai"


def _texts(content: object, where: str, *, empty_ok: bool) -> list[TextPart] | None:
    """The text parts of a ``content`` (None: no content); the first carries its shape."""
    if content is None:
        return None
    if isinstance(content, str):
        if not content and not empty_ok:
            raise reject(where, "empty content")
        return [TextPart(text=content, wire={_FORMAT: {}} if not content else None)]
    if not isinstance(content, list) or not content:
        raise reject(where, "content must be a string or a non-empty list of text parts")
    parts: list[TextPart] = []
    for index, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text":
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            at = f"{where}.content[{index}]"
            raise reject(at, f"only text parts can be recorded, got {kind!r}")
        text = block.get("text")
        if not isinstance(text, str):
            raise reject(f"{where}.content[{index}]", "text must be a string")
        extra = {k: v for k, v in block.items() if k not in ("type", "text")}
        wire: WireFields = {_FORMAT: {"block": extra}}
        if not parts:
            put_wire(wire, _FORMAT, "content", "list")
        parts.append(TextPart(text=text, wire=wire))
    return parts


def _opening(parts: list[MessagePart], extra: dict[str, Any]) -> None:
    """Keep the message's other keys on its first part."""
    if not extra or not parts:
        return
    first = parts[0]
    assert isinstance(first, TextPart | ToolPart)
    first.wire = {**(first.wire or {})}
    put_wire(first.wire, _FORMAT, "message", extra)


def _calls(calls: list[Any], pairing: Pairing, where: str) -> list[MessagePart]:
    parts: list[MessagePart] = []
    for index, call in enumerate(calls):
        at = f"{where}.tool_calls[{index}]"
        if not isinstance(call, dict):
            raise reject(at, "a tool call must be a dict")
        function = call.get("function")
        if call.get("type", "function") != "function" or not isinstance(function, dict):
            raise reject(at, "only function tool calls can be recorded")
        name, call_id = function.get("name"), call.get("id")
        if not isinstance(name, str) or not name or not isinstance(call_id, str) or not call_id:
            raise reject(at, "a tool call needs an id and a function name")
        unknown = sorted(set(function) - {"name", "arguments"})
        if unknown:
            raise reject(at, f"unknown function fields {unknown}")
        extra = {k: v for k, v in call.items() if k not in ("id", "function", "type")}
        parts.append(pairing.json_call(name, call_id, function.get("arguments", ""), extra, at))
    return parts


def parse_openai(messages: list[dict[str, Any]]) -> Intake:
    """The :class:`Intake` of OpenAI chat ``messages``."""
    intake = Intake()
    pairing = Pairing(_FORMAT)
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role")
        if role == "tool":
            content = message.get("content")
            known = ("role", "tool_call_id", "content")
            extra = {k: v for k, v in message.items() if k not in known}
            if isinstance(content, list):
                texts = _texts(content, where, empty_ok=True) or []
                output = "".join(t.text for t in texts)
                extra["content"] = content
            elif isinstance(content, str):
                output = content
            else:
                raise reject(where, "a tool message's content must be a string or text parts")
            pairing.result(message.get("tool_call_id"), output, False, extra, where)
            continue
        if role in ("system", "developer"):
            raise reject(
                where,
                f"a {role} message cannot be recorded: the system prompt is the session's "
                "(system_prompt=) or the one given to context_for_next_turn",
            )
        if role not in ("user", "assistant"):
            raise reject(where, f"unknown role {role!r}")
        extra = {k: v for k, v in message.items() if k not in ("role", "content")}
        parts: list[MessagePart] = []
        if role == "user":
            user_texts = _texts(message.get("content"), where, empty_ok=False)
            if user_texts is None:
                raise reject(where, "a user message needs content")
            parts.extend(user_texts)
        else:
            calls = extra.get("tool_calls")
            if isinstance(calls, list) and calls:
                del extra["tool_calls"]
            else:
                calls = []
            parts.extend(_texts(message.get("content"), where, empty_ok=True) or [])
            parts.extend(_calls(calls, pairing, where))
            if not parts:
                raise reject(where, "an assistant message needs content or tool_calls")
        _opening(parts, extra)
        intake.messages.append(IntakeMessage(role, parts))
    intake.earlier_results = pairing.earlier
    return intake
