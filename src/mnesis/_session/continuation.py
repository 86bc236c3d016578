"""Where a turn continues when ``send()`` / ``stream()`` get no new user message.

A loop that runs tools mnesis does not own answers them with ``complete_tool_call`` and
then calls the model again on the same turn. That is valid only while the conversation
waits for the model: its newest message is an assistant turn whose last round called
tools that all have results, or a user message whose model call failed. Anything else
would send two assistant turns in a row (or an unanswered call), which providers
reject, so it is refused before anything is written.
"""

from __future__ import annotations

from mnesis.errors import InvalidArgumentError
from mnesis.models.message import FinishReason, MessageWithParts
from mnesis.models.parts import TextPart, ToolPart
from mnesis.store.immutable import ImmutableStore

__all__ = ["SCAN_LIMIT", "continuation_parent"]

SCAN_LIMIT = 16
"""How many of the newest messages are read looking past failed model calls."""

_UNSETTLED = ("pending", "running")


def _failed_stub(message: MessageWithParts) -> bool:
    """The assistant row of a model call that failed or never finished: never sent."""
    if message.role != "assistant":
        return False
    return message.message.finish_reason == FinishReason.ERROR or not message.parts


def _waits_for_model(message: MessageWithParts) -> bool:
    """True if the assistant turn's last round called tools (no answer text after them)."""
    last_call = max((i for i, p in enumerate(message.parts) if isinstance(p, ToolPart)), default=-1)
    if last_call < 0:
        return False
    after = message.parts[last_call + 1 :]
    return not any(isinstance(p, TextPart) and p.text.strip() for p in after)


async def continuation_parent(store: ImmutableStore, session_id: str) -> str:
    """The ID of the user message the continued turn answers.

    Raises :class:`~mnesis.errors.InvalidArgumentError` when there is nothing to
    continue: a tool call still without a result, a turn already answered, no turn.
    """
    items = await store.get_context_items(
        session_id, item_type="message", newest_first=True, limit=SCAN_LIMIT
    )
    messages = await store.get_messages_by_ids([i.item_id for i in items])
    answered_by_tool_rows = False
    for message in messages:
        if _failed_stub(message):
            continue
        if message.role == "tool":
            answered_by_tool_rows = True
            continue
        if message.role == "user":
            if answered_by_tool_rows:
                break
            return message.id
        if message.role != "assistant":
            break
        unsettled = [
            p.tool_call_id
            for p in message.tool_parts
            if p.status.state in _UNSETTLED and not answered_by_tool_rows
        ]
        if unsettled:
            raise InvalidArgumentError(
                f"tool call(s) {', '.join(unsettled)} have no result yet: answer each with "
                "complete_tool_call(id, output=... or error=...) (an lcm_* call: "
                "execute_tool(name, arguments) gives its output) before continuing the turn "
                "without a new message"
            )
        if not answered_by_tool_rows and not _waits_for_model(message):
            raise InvalidArgumentError(
                "nothing to continue: the last turn ended with the model's answer; "
                "send a new user message"
            )
        return message.message.parent_id or message.id
    raise InvalidArgumentError(
        "nothing to continue: send() / stream() without a message call the model again "
        "after complete_tool_call (or after a failed model call); send a user message"
    )
