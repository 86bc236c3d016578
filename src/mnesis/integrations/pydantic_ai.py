"""pydantic-ai (``pip install 'mnesis-lcm[pydantic-ai]'``): the mnesis window as the
agent's history, a recorder of each run's new messages, and the ``lcm_*`` tools.

``memory = MnesisPydanticMemory(session)``; ``Agent(..., history_processors=[memory.
history_processor], tools=memory.tools())``; run without ``message_history`` (mnesis is
the history) and record afterwards: ``await memory.record(result)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from mnesis.errors import InvalidArgumentError
from mnesis.integrations.tools import DEFAULT_EXCLUDE, lcm_tool_specs
from mnesis.models.message import RecordResult
from mnesis.session import MnesisSession

__all__ = ["MnesisPydanticMemory", "to_model_messages", "to_openai_messages"]


class MnesisPydanticMemory:
    """A pydantic-ai agent's memory in a :class:`~mnesis.session.MnesisSession`."""

    def __init__(self, session: MnesisSession) -> None:
        """Wrap ``session`` (open, any store)."""
        if not isinstance(session, MnesisSession):
            raise InvalidArgumentError(
                f"MnesisPydanticMemory needs a MnesisSession, got {type(session).__name__}"
            )
        self.session = session

    async def history_processor(
        self, ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        """``history_processors=[memory.history_processor]``: the agent's system prompt,
        then the mnesis window (compacted history, summaries included), then this run's
        messages (not recorded yet)."""
        system: list[ModelRequestPart] = []
        current: list[ModelMessage] = []
        for message in messages:
            if isinstance(message, ModelRequest):
                system.extend(p for p in message.parts if isinstance(p, SystemPromptPart))
            # pydantic-ai keeps what a processor returns as the run's messages: the window
            # given on an earlier request of this run comes back, marked, and is replaced.
            if _from_window(message):
                continue
            if isinstance(message, ModelRequest):
                kept: list[ModelRequestPart] = [
                    p for p in message.parts if not isinstance(p, SystemPromptPart)
                ]
                if kept:
                    current.append(_replace_parts(message, kept))
            else:
                current.append(message)
        window = to_model_messages(await self.session.context_for_next_turn(format="openai"))
        head: list[ModelMessage] = [ModelRequest(parts=system)] if system else []
        for message in head + window:
            message.metadata = {**(message.metadata or {}), _MARK: True}
        return head + window + current

    async def record(self, run: Any) -> RecordResult | None:
        """Record a finished run (``AgentRunResult``, or the list of its
        ``all_messages()``) as a turn of ordered rounds; None when nothing is left.

        The window this processor supplied is left out (marked in ``metadata``), so is the
        system prompt (the agent owns it). Pass the result or ``all_messages()``, not
        ``new_messages()``: once a processor rewrote the history, pydantic-ai counts the
        run's user prompt as history.
        """
        messages = run.all_messages() if hasattr(run, "all_messages") else run
        if not isinstance(messages, Sequence):
            raise InvalidArgumentError(
                f"record needs a run result or a list of messages, got {type(run).__name__}"
            )
        converted = to_openai_messages([m for m in messages if not _from_window(m)])
        if not converted:
            return None
        return await self.session.record_messages(converted, format="openai")

    def tools(self, *, exclude: Sequence[str] = DEFAULT_EXCLUDE) -> list[Tool[Any]]:
        """The ``lcm_*`` tools as pydantic-ai tools (``Agent(tools=...)``)."""
        tools: list[Tool[Any]] = []
        for spec in lcm_tool_specs(lambda: self.session, exclude=exclude):

            async def run(_run: Any = spec.run, **arguments: Any) -> str:
                return str(await _run(arguments))

            tools.append(Tool.from_schema(run, spec.name, spec.description, spec.parameters))
        return tools


_MARK = "mnesis_window"


def _from_window(message: ModelMessage) -> bool:
    return bool(message.metadata and message.metadata.get(_MARK))


def _replace_parts(message: ModelRequest, parts: list[ModelRequestPart]) -> ModelRequest:
    return ModelRequest(parts=parts, instructions=message.instructions, metadata=message.metadata)


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for item in content:
        if not isinstance(item, str):
            raise InvalidArgumentError(
                f"{where}: only text user content is supported, got {type(item).__name__}"
            )
        texts.append(item)
    return "\n".join(texts)


def to_openai_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai messages as OpenAI chat messages (one assistant message per model
    response, one ``tool`` message per tool return or tool retry)."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(message, ModelResponse):
            out.extend(_response(message))
            continue
        if not isinstance(message, ModelRequest):
            raise InvalidArgumentError(f"{where}: not a pydantic-ai model message")
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": _text(part.content, where)})
            elif isinstance(part, ToolReturnPart):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": part.model_response_str(),
                    }
                )
            elif isinstance(part, RetryPromptPart):
                text = part.model_response()
                if part.tool_name is None:
                    out.append({"role": "user", "content": text})
                else:
                    content = f"Error: {text}"
                    out.append(
                        {"role": "tool", "tool_call_id": part.tool_call_id, "content": content}
                    )
            elif not isinstance(part, SystemPromptPart):
                raise InvalidArgumentError(
                    f"{where}: {type(part).__name__} is not supported yet "
                    "(user prompts, tool returns and retries are)"
                )
    return out


def _response(message: ModelResponse) -> list[dict[str, Any]]:
    texts = [p.content for p in message.parts if isinstance(p, TextPart) and p.content]
    calls = [
        {
            "id": p.tool_call_id,
            "type": "function",
            "function": {"name": p.tool_name, "arguments": _arguments(p)},
        }
        for p in message.parts
        if isinstance(p, ToolCallPart)
    ]
    if not texts and not calls:
        return []
    assistant: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        assistant["tool_calls"] = calls
    return [assistant]


def _arguments(part: ToolCallPart) -> str:
    """The arguments string as the model sent it (re-serialised only when parsed)."""
    return part.args if isinstance(part.args, str) else part.args_as_json_str()


def to_model_messages(messages: Sequence[dict[str, Any]]) -> list[ModelMessage]:
    """OpenAI chat messages (a mnesis window) as pydantic-ai messages; system messages
    are left out (the agent sends its own prompt)."""
    out: list[ModelMessage] = []
    names: dict[str, str] = {}
    returns: list[ModelRequestPart] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            returns.append(
                ToolReturnPart(
                    tool_name=names.get(call_id, "unknown"),
                    content=message.get("content"),
                    tool_call_id=call_id,
                )
            )
            continue
        if returns:
            out.append(ModelRequest(parts=returns))
            returns = []
        if role == "user":
            out.append(ModelRequest(parts=[UserPromptPart(content=_plain(message["content"]))]))
        elif role == "assistant":
            parts: list[ModelResponsePart] = []
            if message.get("content"):
                parts.append(TextPart(content=_plain(message["content"])))
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                parts.append(
                    ToolCallPart(
                        tool_name=call["function"]["name"],
                        args=call["function"]["arguments"],
                        tool_call_id=call["id"],
                    )
                )
            out.append(ModelResponse(parts=parts))
    if returns:
        out.append(ModelRequest(parts=returns))
    return out


def _plain(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(block.get("text", "")) for block in content if isinstance(block, dict)
    ) or json.dumps(content)
