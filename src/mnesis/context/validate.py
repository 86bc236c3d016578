"""The providers' rules for a request's messages, checked: :func:`validate`.

Each rule is one the provider's API enforces with an HTTP 400; :func:`validate` returns
every violation it finds (an empty list: the messages may be sent), so a caller can log
them all, and :func:`ensure_valid` raises them as one
:class:`~mnesis.errors.InvalidArgumentError`.

OpenAI Chat Completions (``format="openai"``):
  roles are ``system`` / ``developer`` / ``user`` / ``assistant`` / ``tool``; every
  ``tool_calls`` ID is answered by a ``tool`` message before the next non-tool message;
  a ``tool`` message answers a call of the assistant message it follows (no orphan
  result, no second answer); call IDs are unique; an assistant message has content or
  tool calls.
Anthropic Messages (``format="anthropic"``; the body ``{"system", "messages"}`` or the
list of messages):
  roles are ``user`` / ``assistant``, the first is ``user``, they alternate strictly;
  content is a non-empty string or list, text blocks are non-empty; every ``tool_use``
  of an assistant turn is answered by a ``tool_result`` in the very next user turn, where
  the results come before any other block; a ``tool_result`` answers a ``tool_use`` of
  the turn just before; ``tool_use`` IDs are unique and match ``^[A-Za-z0-9_-]+$``;
  ``cache_control`` is on at most 4 blocks (the system prompt's included).
OpenAI Responses (``format="responses"``, the ``input`` items):
  each ``function_call`` has its ``function_call_output`` (same ``call_id``) after it,
  each output answers an earlier call, once; call IDs are unique; a ``reasoning`` item
  is followed by the item it reasoned for (an assistant message or a function call).

``allow_pending=True`` accepts calls of the last assistant turn that are not answered
yet: a context the caller is about to complete (``context_for_next_turn`` sends the
pending calls of its last message), not a request to send as it is.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from mnesis.errors import InvalidArgumentError

__all__ = ["MAX_CACHE_BREAKPOINTS", "WireFormat", "ensure_valid", "validate"]

WireFormat = Literal["openai", "anthropic", "responses"]
"""The formats :func:`validate` checks."""
MAX_CACHE_BREAKPOINTS = 4
"""The ``cache_control`` blocks Anthropic accepts in one request."""

_ANTHROPIC_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_OPENAI_ROLES = frozenset(("system", "developer", "user", "assistant", "tool"))


def validate(
    messages: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    format: WireFormat,
    *,
    allow_pending: bool = False,
) -> list[str]:
    """The violations of ``format``'s rules in ``messages`` (empty: valid).

    Each violation is one line naming the message index (``messages[3]: ...``). Raises
    :class:`~mnesis.errors.InvalidArgumentError` only for an unknown ``format`` or a
    value that is not a list of messages (an Anthropic body dict is accepted).
    """
    if format == "anthropic":
        return _anthropic(messages, allow_pending)
    if format not in ("openai", "responses"):
        raise InvalidArgumentError(
            f"format must be 'openai', 'anthropic' or 'responses', got {format!r}"
        )
    items = _items(messages, format)
    return _openai(items, allow_pending) if format == "openai" else _responses(items, allow_pending)


def ensure_valid(
    messages: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    format: WireFormat,
    *,
    allow_pending: bool = False,
) -> None:
    """Raise :class:`~mnesis.errors.InvalidArgumentError` listing the violations of
    :func:`validate`, if there are any."""
    problems = validate(messages, format, allow_pending=allow_pending)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InvalidArgumentError(f"messages break the {format} rules: {shown}{more}")


def _items(messages: object, format: str) -> list[Mapping[str, Any]]:
    if isinstance(messages, Mapping) or not isinstance(messages, Sequence):
        raise InvalidArgumentError(f"{format} messages must be a list of dicts")
    if isinstance(messages, str | bytes):
        raise InvalidArgumentError(f"{format} messages must be a list of dicts")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidArgumentError(
                f"messages[{index}] must be a dict, got {type(message).__name__}"
            )
    return list(messages)


def _openai(messages: list[Mapping[str, Any]], allow_pending: bool) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    open_calls: dict[str, int] = {}  # unanswered call ID → index of its assistant message
    last_assistant = max(
        (i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1
    )
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role")
        if role not in _OPENAI_ROLES:
            problems.append(f"{where}: unknown role {role!r}")
            continue
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(
                    f"{where}: tool result {call_id!r} answers no call of the assistant "
                    "message before it"
                )
            open_calls.pop(call_id, None)  # type: ignore[arg-type]
            continue
        for call_id in open_calls:
            problems.append(f"{where}: tool call {call_id!r} has no tool message before it")
        open_calls = {}
        if role != "assistant":
            continue
        calls = message.get("tool_calls") or []
        content = message.get("content")
        if not calls and content is None:
            problems.append(f"{where}: an assistant message needs content or tool_calls")
        for call in calls:
            call_id = call.get("id") if isinstance(call, Mapping) else None
            if not isinstance(call_id, str) or not call_id:
                problems.append(f"{where}: a tool call without an id")
                continue
            if call_id in seen:
                problems.append(f"{where}: duplicate tool call id {call_id!r}")
            seen.add(call_id)
            open_calls[call_id] = index
    for call_id, index in open_calls.items():
        if not (allow_pending and index == last_assistant):
            problems.append(f"messages[{index}]: tool call {call_id!r} is never answered")
    return problems


def _blocks(content: object) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, Sequence):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _anthropic(body: object, allow_pending: bool) -> list[str]:
    problems: list[str] = []
    breakpoints = 0
    if isinstance(body, Mapping):
        system = body.get("system")
        if isinstance(system, Sequence) and not isinstance(system, str):
            breakpoints += sum(
                1 for b in system if isinstance(b, Mapping) and b.get("cache_control")
            )
        messages = _items(body.get("messages", []), "anthropic")
    else:
        messages = _items(body, "anthropic")
    if messages and messages[0].get("role") != "user":
        problems.append("messages[0]: the first message must be a user message")
    for index, (a, b) in enumerate(itertools.pairwise(messages), 1):
        if a.get("role") == b.get("role"):
            problems.append(f"messages[{index}]: two {b.get('role')} messages in a row")
    seen: set[str] = set()
    pending: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"{where}: role must be user or assistant, got {role!r}")
        content = message.get("content")
        blocks = _blocks(content)
        if not blocks or (isinstance(content, str) and not content):
            problems.append(f"{where}: empty content")
        breakpoints += sum(1 for b in blocks if b.get("cache_control"))
        for block in blocks:
            if block.get("type") == "text" and not block.get("text"):
                problems.append(f"{where}: empty text block")
        if role == "user":
            answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            kinds = [b.get("type") for b in blocks]
            if answered and kinds[: len(answered)] != ["tool_result"] * len(answered):
                problems.append(f"{where}: tool_result blocks must come first")
            for call_id in answered:
                if call_id not in pending:
                    problems.append(
                        f"{where}: tool_result {call_id!r} answers no tool_use of the "
                        "previous message"
                    )
                pending.discard(call_id)
        if not (allow_pending and role == "user" and index == len(messages) - 1):
            for call_id in sorted(pending):
                problems.append(
                    f"{where}: tool_use {call_id!r} is not answered by a tool_result in this "
                    "message"
                )
            pending = set()
        if role == "assistant":
            for block in blocks:
                if block.get("type") != "tool_use":
                    continue
                call_id = block.get("id")
                if not isinstance(call_id, str) or not _ANTHROPIC_ID.match(call_id):
                    problems.append(f"{where}: tool_use id {call_id!r} is not [A-Za-z0-9_-]+")
                    continue
                if call_id in seen:
                    problems.append(f"{where}: duplicate tool_use id {call_id!r}")
                seen.add(call_id)
                pending.add(call_id)
    if pending and not allow_pending:
        last = len(messages) - 1
        for call_id in sorted(pending):
            problems.append(f"messages[{last}]: tool_use {call_id!r} is never answered")
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        problems.append(f"cache_control on {breakpoints} blocks (at most {MAX_CACHE_BREAKPOINTS})")
    return problems


def _responses(items: list[Mapping[str, Any]], allow_pending: bool) -> list[str]:
    problems: list[str] = []
    calls: dict[str, int] = {}
    answered: set[str] = set()
    last_round = _last_round(items)
    for index, item in enumerate(items):
        where = f"input[{index}]"
        kind = item.get("type", "message")
        if kind == "function_call":
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                problems.append(f"{where}: a function_call without a call_id")
                continue
            if call_id in calls:
                problems.append(f"{where}: duplicate call_id {call_id!r}")
            calls[call_id] = index
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                problems.append(f"{where}: output {call_id!r} answers no earlier function_call")
            elif call_id in answered:
                problems.append(f"{where}: a second output for {call_id!r}")
            answered.add(call_id)  # type: ignore[arg-type]
        elif kind == "reasoning":
            following = items[index + 1] if index + 1 < len(items) else {}
            kind_after = following.get("type", "message")
            if not (
                kind_after == "function_call"
                or (kind_after == "message" and following.get("role") == "assistant")
            ):
                problems.append(f"{where}: a reasoning item without its following item")
    for call_id, index in calls.items():
        if call_id not in answered and not (allow_pending and index >= last_round):
            problems.append(f"input[{index}]: function_call {call_id!r} has no output")
    return problems


def _last_round(items: list[Mapping[str, Any]]) -> int:
    """Where the last round's items start: the run of assistant-side items before the
    trailing outputs (its calls may be pending with ``allow_pending``)."""
    index = len(items)
    while index and items[index - 1].get("type") == "function_call_output":
        index -= 1
    while (
        index
        and items[index - 1].get("type", "message") != "function_call_output"
        and not (
            items[index - 1].get("type", "message") == "message"
            and items[index - 1].get("role") == "user"
        )
    ):
        index -= 1
    return index
