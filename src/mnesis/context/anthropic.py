"""A built context in the Anthropic Messages format: ``{"system": ..., "messages": [...]}``.

* the system prompt goes in the top-level ``system`` field, never in ``messages``;
* ``messages`` holds only ``user`` and ``assistant`` turns, consecutive turns of one
  role merged, so roles alternate and the first turn is a user turn;
* each round is an assistant turn with its blocks in stored order (``thinking`` blocks
  recorded from Anthropic with their signature, text, ``tool_use``); its results are
  ``tool_result`` blocks at the start of the next user turn (``is_error`` when the
  tool failed; a tombstoned output is the tombstone line), before any text of it;
* summaries are user text annotated with their IDs;
* a message recorded with ``record_messages(format="anthropic")`` comes back as it was
  recorded (string or block content, the blocks' extra fields), ``cache_control`` aside.

With ``cache_control=True`` the request carries prompt-caching breakpoints
(``{"type": "ephemeral"}``) on the system prompt, at the end of the summaries (the
prefix that stays byte-identical until the next compaction) and on the last block
of the conversation (so the next turn reads everything before it from the cache):
three of the four breakpoints Anthropic allows. Every content is then a list of
blocks (a breakpoint sits on a block), so a turn renders the same bytes whether it is
the last one or not.
"""

from __future__ import annotations

import re
from typing import Any

from mnesis.context.entries import (
    ContextEntry,
    WireBlock,
    WireCall,
    WireReasoning,
    WireText,
    wire_fields,
    wire_turns,
)

__all__ = ["EPHEMERAL", "OPENING_PLACEHOLDER", "render_anthropic"]

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""The ``cache_control`` value of a breakpoint."""

OPENING_PLACEHOLDER = "[Earlier messages are outside this context window; lcm_grep searches them.]"
"""The user turn put first when the view starts with an assistant turn (the Messages API
wants a user turn first)."""

_FORMAT = "anthropic"
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


def _id(call: WireCall) -> str:
    """Anthropic tool IDs match ``^[A-Za-z0-9_-]+$``."""
    return _UNSAFE_ID.sub("_", call.id) or "call"


def _tool_use(call: WireCall) -> dict[str, Any]:
    extra = wire_fields(call.wire, _FORMAT).get("block", {})
    use = {"type": "tool_use", "id": _id(call), "name": call.name, "input": call.arguments}
    return {**use, **extra}


def _tool_result(call: WireCall) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _id(call)}
    extra = dict(wire_fields(call.wire, _FORMAT).get("result", {}))
    if call.tombstoned:
        extra.pop("content", None)  # recorded list content: the tombstone replaces it
    if "content" in extra:
        block["content"] = extra.pop("content")
    elif call.result:
        block["content"] = call.result
    if call.is_error:
        block["is_error"] = True
    block.update(extra)
    return block


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _block(block: WireBlock) -> dict[str, Any] | None:
    """The content block of a text or reasoning block (None: not sent)."""
    if isinstance(block, WireText):
        if not block.text:
            return None  # the API rejects empty text blocks
        return {**_text(block.text), **wire_fields(block.wire, _FORMAT).get("block", {})}
    if isinstance(block, WireReasoning):
        recorded = wire_fields(block.wire, _FORMAT).get("block")
        if not isinstance(recorded, dict):
            return None  # reasoning from another provider: its signature would not verify
        if recorded.get("type", "thinking") != "thinking":
            return dict(recorded)  # redacted_thinking: opaque data, no text
        return {"type": "thinking", "thinking": block.text, **recorded}
    return _tool_use(block)


def render_anthropic(
    system_prompt: str, entries: list[ContextEntry], *, cache_control: bool = False
) -> dict[str, Any]:
    """``entries`` as an Anthropic Messages request body (``system`` and ``messages``)."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    as_string: set[int] = set()  # text blocks recorded as a plain string content

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))

    summary_end: dict[str, Any] | None = None
    for turn in wire_turns(entries):
        blocks = [b for b in map(_block, turn.blocks) if b is not None]
        if turn.summary_id is not None and blocks:
            summary_end = blocks[-1]
        if turn.opening(_FORMAT).get("content") == "str" and len(blocks) == 1:
            as_string.add(id(blocks[0]))
        results = [_tool_result(c) for c in turn.calls if c.result is not None]
        if turn.role == "assistant":
            add("assistant", blocks)
        else:
            add("user", [b for b in blocks if b["type"] != "tool_use"])
            add("assistant", [b for b in blocks if b["type"] == "tool_use"])
        add("user", results)
    if turns and turns[0][0] == "assistant":
        turns.insert(0, ("user", [_text(OPENING_PLACEHOLDER)]))
    messages: list[dict[str, Any]] = []
    for role, blocks in turns:
        content: str | list[dict[str, Any]] = blocks
        if not cache_control and len(blocks) == 1 and id(blocks[0]) in as_string:
            content = blocks[0]["text"]
        messages.append({"role": role, "content": content})
    system: str | list[dict[str, Any]] = system_prompt
    if cache_control:
        if system_prompt:
            system = [{**_text(system_prompt), "cache_control": dict(EPHEMERAL)}]
        if summary_end is not None:
            summary_end["cache_control"] = dict(EPHEMERAL)
        if turns:
            turns[-1][1][-1]["cache_control"] = dict(EPHEMERAL)
    return {"system": system, "messages": messages}
