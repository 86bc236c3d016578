"""Google ADK events ↔ OpenAI chat messages, for :mod:`mnesis.integrations.google_adk`.

An ADK event's content is a ``google.genai`` ``Content``: the user's text, the model's
text and ``function_call`` parts, or ``function_response`` parts. Stored in mnesis as
OpenAI chat messages (``user``, ``assistant`` with ``tool_calls`` and its author as
``name``, one ``tool`` message per response), and read back from the mnesis window as
events the ADK flow turns into the model's contents.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from mnesis.errors import InvalidArgumentError

__all__ = ["event_to_messages", "messages_to_events"]

USER = "user"


def event_to_messages(event: Event) -> list[dict[str, Any]]:
    """The OpenAI chat messages an ADK event stands for (empty: nothing to store, e.g.
    a state-only event or one with thoughts only).

    Raises :class:`~mnesis.errors.InvalidArgumentError` for content other than text,
    function calls and function responses (images, files, code execution: not
    supported yet).
    """
    content = event.content
    if content is None or not content.parts:
        return []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for index, part in enumerate(content.parts):
        if part.thought:
            continue
        if part.function_call is not None:
            call = part.function_call
            if not call.id or not call.name:
                raise InvalidArgumentError(
                    f"event {event.id}: function_call part {index} has no id or name"
                )
            arguments = json.dumps(call.args or {}, ensure_ascii=False, default=str)
            calls.append(
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments},
                }
            )
        elif part.function_response is not None:
            response = part.function_response
            if not response.id:
                raise InvalidArgumentError(
                    f"event {event.id}: function_response part {index} has no id"
                )
            output = json.dumps(response.response or {}, ensure_ascii=False, default=str)
            results.append({"role": "tool", "tool_call_id": response.id, "content": output})
        elif part.text is not None:
            texts.append(part.text)
        else:
            kinds = [k for k, v in part.model_dump(exclude_none=True).items() if v is not None]
            raise InvalidArgumentError(
                f"event {event.id}: part {index} ({', '.join(kinds) or 'empty'}) is not "
                "supported yet (text, function_call and function_response parts are)"
            )
    text = "".join(texts)
    if content.role == "model":
        if results:
            raise InvalidArgumentError(f"event {event.id}: a model event with function responses")
        if not text and not calls:
            return []
        assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
        if event.author:
            assistant["name"] = event.author
        if calls:
            assistant["tool_calls"] = calls
        return [assistant]
    if calls:
        raise InvalidArgumentError(f"event {event.id}: a user event with function calls")
    out = list(results)
    if text:
        out.append({"role": "user", "content": text})
    return out


def messages_to_events(
    messages: Sequence[dict[str, Any]],
    *,
    invocation_id: str,
    timestamp: float,
    default_author: str = "model",
) -> list[Event]:
    """OpenAI chat messages (a mnesis window) as ADK events; system messages are left
    out (the agent's instruction is the system prompt). An assistant message's author is
    its ``name`` (``default_author`` without one); tool results in a row become one
    event, authored by the agent that made the calls."""
    events: list[Event] = []
    authors: dict[str, tuple[str, str]] = {}
    results: list[types.Part] = []
    results_author = default_author

    def event(author: str, role: str, parts: list[types.Part]) -> Event:
        return Event(
            id=f"{invocation_id}-{len(events)}",
            invocation_id=invocation_id,
            author=author,
            timestamp=timestamp,
            content=types.Content(role=role, parts=parts),
        )

    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            name, results_author = authors.get(call_id, ("unknown", default_author))
            response = types.FunctionResponse(
                id=call_id, name=name, response=_response(message.get("content"))
            )
            results.append(types.Part(function_response=response))
            continue
        if results:
            events.append(event(results_author, USER, results))
            results = []
        if role == "user":
            events.append(event(USER, USER, [types.Part(text=_plain(message.get("content")))]))
        elif role == "assistant":
            author = str(message.get("name") or default_author)
            parts: list[types.Part] = []
            if message.get("content"):
                parts.append(types.Part(text=_plain(message["content"])))
            for call in message.get("tool_calls") or []:
                function = call["function"]
                authors[call["id"]] = (function["name"], author)
                parts.append(
                    types.Part(
                        function_call=types.FunctionCall(
                            id=call["id"], name=function["name"], args=_args(function)
                        )
                    )
                )
            if parts:
                events.append(event(author, "model", parts))
    if results:
        events.append(event(results_author, USER, results))
    return events


def _response(content: Any) -> dict[str, Any]:
    text = _plain(content)
    try:
        value = json.loads(text)
    except ValueError:
        return {"result": text}
    return value if isinstance(value, dict) else {"result": value}


def _args(function: dict[str, Any]) -> dict[str, Any]:
    raw = function.get("arguments") or "{}"
    try:
        value = json.loads(raw)
    except ValueError:
        return {"arguments": raw}
    return value if isinstance(value, dict) else {"arguments": value}


def _plain(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
