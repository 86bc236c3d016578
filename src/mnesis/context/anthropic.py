"""A built context in the Anthropic Messages format: ``{"system": ..., "messages": [...]}``.

* the system prompt goes in the top-level ``system`` field, never in ``messages``;
* ``messages`` holds only ``user`` and ``assistant`` turns, consecutive turns of one
  role merged, so roles alternate and the first turn is a user turn;
* an assistant turn that called tools carries ``tool_use`` blocks; their results are
  ``tool_result`` blocks at the start of the next user turn (``is_error`` when the
  tool failed; a tombstoned output is the tombstone line);
* summaries are user text annotated with their IDs.

With ``cache_control=True`` the request carries prompt-caching breakpoints
(``{"type": "ephemeral"}``) on the system prompt, at the end of the summaries (the
prefix that stays byte-identical until the next compaction) and on the last block
of the conversation (so the next turn reads everything before it from the cache):
three of the four breakpoints Anthropic allows.
"""

from __future__ import annotations

import re
from typing import Any

from mnesis.context.entries import ContextEntry, WireCall, wire_turns

__all__ = ["EPHEMERAL", "OPENING_PLACEHOLDER", "render_anthropic"]

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""The ``cache_control`` value of a breakpoint."""

OPENING_PLACEHOLDER = "[Earlier messages are outside this context window; lcm_grep searches them.]"
"""The user turn put first when the view starts with an assistant turn (the Messages API
wants a user turn first)."""

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


def _id(call: WireCall) -> str:
    """Anthropic tool IDs match ``^[A-Za-z0-9_-]+$``."""
    return _UNSAFE_ID.sub("_", call.id) or "call"


def _tool_use(call: WireCall) -> dict[str, Any]:
    return {"type": "tool_use", "id": _id(call), "name": call.name, "input": call.arguments}


def _tool_result(call: WireCall) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _id(call)}
    if call.result:
        block["content"] = call.result
    if call.is_error:
        block["is_error"] = True
    return block


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def render_anthropic(
    system_prompt: str, entries: list[ContextEntry], *, cache_control: bool = False
) -> dict[str, Any]:
    """``entries`` as an Anthropic Messages request body (``system`` and ``messages``)."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))

    summary_end: dict[str, Any] | None = None
    for turn in wire_turns(entries):
        text = [_text(turn.text)] if turn.text else []
        if turn.summary_id is not None and text:
            summary_end = text[0]
        uses = [_tool_use(c) for c in turn.calls]
        results = [_tool_result(c) for c in turn.calls if c.result is not None]
        if turn.role == "assistant":
            add("assistant", text + uses)
        else:
            add("user", text)
            add("assistant", uses)
        add("user", results)
    if turns and turns[0][0] == "assistant":
        turns.insert(0, ("user", [_text(OPENING_PLACEHOLDER)]))
    messages = [{"role": role, "content": blocks} for role, blocks in turns]
    system: str | list[dict[str, Any]] = system_prompt
    if cache_control:
        if system_prompt:
            system = [{**_text(system_prompt), "cache_control": dict(EPHEMERAL)}]
        if summary_end is not None:
            summary_end["cache_control"] = dict(EPHEMERAL)
        if turns:
            turns[-1][1][-1]["cache_control"] = dict(EPHEMERAL)
    return {"system": system, "messages": messages}
