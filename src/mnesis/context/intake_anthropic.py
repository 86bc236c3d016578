"""Anthropic Messages into stored rounds (see :mod:`mnesis.context.intake`).

A ``user`` message's ``tool_result`` blocks (first in it, as the API wants) are the
results of the calls of the assistant message before it, or, in a continuation, of calls
recorded earlier; its other blocks (text) start a new turn. Each ``assistant`` message is
one round, its blocks in order: ``thinking`` / ``redacted_thinking`` (kept with their
signature or data, sent back in this format only), ``text``, ``tool_use``. Image,
document and server-tool blocks are refused.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from mnesis.context.intake import Intake, IntakeMessage, Pairing, put_wire, reject
from mnesis.models.parts import MessagePart, ReasoningPart, TextPart, ToolPart, WireFields

__all__ = ["parse_anthropic"]

_FORMAT = "anthropic"
_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_DROPPED = ("cache_control",)


def _extra(block: dict[str, Any], *known: str) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k not in known and k not in _DROPPED}


def _text(block: dict[str, Any], where: str) -> TextPart:
    text = block.get("text")
    if not isinstance(text, str) or not text:
        raise reject(where, "a text block needs non-empty text")
    extra = _extra(block, "type", "text")
    return TextPart(text=text, wire={_FORMAT: {"block": extra}} if extra else None)


def _result_output(block: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """The stored output of a ``tool_result`` and the fields kept to render it back."""
    extra = _extra(block, "type", "tool_use_id", "content", "is_error")
    if block.get("is_error") is False:
        extra["is_error"] = False
    content = block.get("content")
    if content is None:
        return "", extra
    if isinstance(content, str):
        if not content:
            extra["content"] = ""
        return content, extra
    if not isinstance(content, list):
        raise reject(where, "tool_result content must be a string or a list of blocks")
    texts = []
    for index, item in enumerate(content):
        if not isinstance(item, dict) or item.get("type") != "text":
            kind = item.get("type") if isinstance(item, dict) else type(item).__name__
            raise reject(f"{where}.content[{index}]", f"only text can be recorded, got {kind!r}")
        texts.append(str(item.get("text", "")))
    extra["content"] = [_extra(item) for item in content]
    return "\n\n".join(texts), extra


def _assistant_block(block: dict[str, Any], pairing: Pairing, where: str) -> MessagePart:
    kind = block.get("type")
    if kind == "text":
        return _text(block, where)
    if kind == "thinking":
        thinking = block.get("thinking")
        if not isinstance(thinking, str):
            raise reject(where, "a thinking block needs its thinking text")
        return ReasoningPart(text=thinking, wire={_FORMAT: {"block": _extra(block, "thinking")}})
    if kind == "redacted_thinking":
        return ReasoningPart(text="", wire={_FORMAT: {"block": _extra(block)}})
    if kind == "tool_use":
        call_id, name, arguments = block.get("id"), block.get("name"), block.get("input", {})
        if not isinstance(call_id, str) or not _ID.match(call_id):
            raise reject(where, f"tool_use id {call_id!r} must match [A-Za-z0-9_-]+")
        if not isinstance(name, str) or not name:
            raise reject(where, "a tool_use block needs a name")
        if not isinstance(arguments, dict):
            raise reject(where, "tool_use input must be an object")
        extra = _extra(block, "type", "id", "name", "input")
        wire: WireFields = {_FORMAT: {"block": extra}} if extra else {}
        part = ToolPart(tool_name=name, tool_call_id=call_id, input=arguments, wire=wire or None)
        return pairing.call(part, where)
    raise reject(where, f"{kind!r} blocks cannot be recorded in an assistant message")


def _blocks(message: dict[str, Any], where: str) -> tuple[list[dict[str, Any]], bool]:
    """The message's blocks, and whether its content was a plain string."""
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            raise reject(where, "empty content")
        return [{"type": "text", "text": content}], True
    if not isinstance(content, list) or not content:
        raise reject(where, "content must be a non-empty string or list of blocks")
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            raise reject(f"{where}.content[{index}]", "a block must be a dict")
    return content, False


def _opening(parts: list[MessagePart], extra: dict[str, Any], as_string: bool) -> None:
    """Keep the message's shape and other keys on its first part."""
    if not parts or not (extra or as_string):
        return
    first = parts[0]
    assert isinstance(first, TextPart | ReasoningPart | ToolPart)
    first.wire = {**(first.wire or {})}
    if extra:
        put_wire(first.wire, _FORMAT, "message", extra)
    if as_string:
        put_wire(first.wire, _FORMAT, "content", "str")


def parse_anthropic(messages: list[dict[str, Any]]) -> Intake:
    """The :class:`Intake` of Anthropic ``messages``."""
    intake = Intake()
    pairing = Pairing(_FORMAT)
    for index, (a, b) in enumerate(itertools.pairwise(messages), 1):
        if a.get("role") == b.get("role"):
            raise reject(f"messages[{index}]", f"two {b.get('role')} messages in a row")
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise reject(where, f"role must be 'user' or 'assistant', got {role!r}")
        blocks, as_string = _blocks(message, where)
        extra = _extra(message, "role", "content")
        parts: list[MessagePart] = []
        if role == "assistant":
            for number, block in enumerate(blocks):
                parts.append(_assistant_block(block, pairing, f"{where}.content[{number}]"))
            _opening(parts, extra, as_string)
            intake.messages.append(IntakeMessage("assistant", parts))
            continue
        results = 0
        for number, block in enumerate(blocks):
            at = f"{where}.content[{number}]"
            kind = block.get("type")
            if kind == "tool_result":
                if parts:
                    raise reject(at, "tool_result blocks must come before any other block")
                output, kept = _result_output(block, at)
                failed = bool(block.get("is_error"))
                pairing.result(block.get("tool_use_id"), output, failed, kept, at)
                results += 1
            elif kind == "text":
                parts.append(_text(block, at))
            else:
                raise reject(at, f"{kind!r} blocks cannot be recorded")
        if extra and not parts:
            raise reject(where, f"fields {sorted(extra)} on a message of tool results only")
        if parts:
            _opening(parts, extra, as_string)
            intake.messages.append(IntakeMessage("user", parts))
    intake.earlier_results = pairing.earlier
    return intake
