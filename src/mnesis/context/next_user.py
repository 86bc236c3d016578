"""The new user message appended to a rendered context by the provider's rules:
``context_for_next_turn(..., user=...)``.

* OpenAI chat and Responses: one more ``{"role": "user", "content": ...}`` message;
* Anthropic: merged into a trailing user turn (the tool results of the last round: two
  user turns in a row are refused by the API), after its blocks; otherwise a new user
  turn. With ``cache_control`` the conversation's last breakpoint moves onto the new
  message's block, so the next request reads all of this one from the cache; the system
  and summary breakpoints do not move.

The text comes out in the very block shape a later rendering of the stored message has
(with ``cache_control``, a ``{"type": "text"}`` block), so the prefix stays byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnesis.errors import InvalidArgumentError

__all__ = ["append_user"]


def _text(user: object) -> str:
    if not isinstance(user, str) or not user.strip():
        raise InvalidArgumentError(f"user must be a non-empty string, got {user!r}"[:200])
    return user


def append_user(
    rendered: list[dict[str, Any]] | dict[str, Any],
    format: str,
    user: object,
    *,
    cache_control: bool,
) -> list[dict[str, Any]] | dict[str, Any]:
    """``rendered`` (a fresh rendering, changed in place) with the user message added."""
    text = _text(user)
    if format == "text":
        raise InvalidArgumentError("user= applies to the openai, anthropic and responses formats")
    if format != "anthropic":
        assert isinstance(rendered, list)
        rendered.append({"role": "user", "content": text})
        return rendered
    assert isinstance(rendered, Mapping)
    messages: list[dict[str, Any]] = rendered["messages"]
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache_control:
        for message in messages[-1:]:
            content = message["content"]
            if isinstance(content, list) and content:
                content[-1].pop("cache_control", None)
        block["cache_control"] = {"type": "ephemeral"}
    if messages and messages[-1]["role"] == "user":
        last = messages[-1]
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        last["content"] = [*blocks, block]
    else:
        messages.append({"role": "user", "content": [block] if cache_control else text})
    return rendered
