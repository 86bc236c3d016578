"""LangChain / LangGraph (``pip install 'mnesis-lcm[langchain]'``): a
``BaseChatMessageHistory`` whose messages are the mnesis window, and the ``lcm_*`` tools
as LangChain tools.

The history owns its session on an event loop of its own (:class:`Portal`), so the
synchronous methods (``messages``, ``add_messages``, ``clear``) work outside any loop and
inside a running one, and the async ones (``aget_messages``, ``aadd_messages``,
``aclear``) from any loop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool, StructuredTool

from mnesis.errors import InvalidArgumentError
from mnesis.integrations.append_only import linked_session
from mnesis.integrations.portal import Portal
from mnesis.integrations.tools import DEFAULT_EXCLUDE, lcm_tool_specs
from mnesis.models.message import CompactionResult
from mnesis.session import MnesisSession

__all__ = ["MnesisChatMessageHistory", "from_openai_messages", "to_openai_messages"]


class MnesisChatMessageHistory(BaseChatMessageHistory):
    """A chat history in a mnesis session (created, or loaded with ``session_id``).

    ``MnesisChatMessageHistory(db_path="agent.db", model="openai/gpt-4.1")`` takes the
    keywords of :meth:`MnesisSession.create` (or ``session_id=`` and those of
    :meth:`~MnesisSession.load`). ``messages`` is the context window (compacted history as
    summary messages, the system prompt left out); ``clear`` moves to a new linked session
    (:mod:`mnesis.integrations.append_only`). Call :meth:`close` when done.
    """

    def __init__(self, session_id: str | None = None, **kwargs: Any) -> None:
        """Open the session on the history's own event loop."""
        self._portal = Portal()
        self._sessions: list[MnesisSession] = []
        try:
            if session_id is not None:
                first = self._portal.call(lambda: MnesisSession.load(session_id, **kwargs))
            else:
                first = self._portal.call(lambda: MnesisSession.create(**kwargs))
        except BaseException:
            self._portal.close()
            raise
        self._sessions.append(first)

    @property
    def session(self) -> MnesisSession:
        """The mnesis session written to now (lives on the history's own loop)."""
        return self._sessions[-1]

    @property
    def session_id(self) -> str:
        """The ID of the session written to now."""
        return self.session.id

    # -- reading ------------------------------------------------------------
    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The context window as LangChain messages."""
        return self._portal.call(self._window)

    async def aget_messages(self) -> list[BaseMessage]:
        """The context window as LangChain messages."""
        return await self._portal.acall(self._window)

    async def _window(self) -> list[BaseMessage]:
        return from_openai_messages(await self.session.context_for_next_turn(format="openai"))

    # -- writing ------------------------------------------------------------
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Record ``messages`` (a turn from a human message, or more of the open turn)."""
        converted = to_openai_messages(messages)
        if converted:
            self._portal.call(lambda: self._record(converted))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Record ``messages`` (a turn from a human message, or more of the open turn)."""
        converted = to_openai_messages(messages)
        if converted:
            await self._portal.acall(lambda: self._record(converted))

    async def _record(self, messages: list[dict[str, Any]]) -> None:
        await self.session.record_messages(messages, format="openai")

    def clear(self) -> None:
        """Move to a new, empty linked session (the old one stays stored, searchable)."""
        self._portal.call(self._clear)

    async def aclear(self) -> None:
        """Move to a new, empty linked session (the old one stays stored, searchable)."""
        await self._portal.acall(self._clear)

    async def _clear(self) -> None:
        self._sessions.append(await linked_session(self.session))

    async def acompact(self) -> CompactionResult:
        """Compact the session now (``MnesisSession.compact`` on the history's loop)."""
        return await self._portal.acall(self.session.compact)

    # -- tools and closing ---------------------------------------------------
    def tools(self, *, exclude: Sequence[str] = DEFAULT_EXCLUDE) -> list[BaseTool]:
        """The ``lcm_*`` tools over the session written to now, sync and async."""
        tools: list[BaseTool] = []
        for spec in lcm_tool_specs(lambda: self.session, exclude=exclude):

            def func(_run: Any = spec.run, **arguments: Any) -> str:
                return str(self._portal.call(lambda: _run(arguments)))

            async def coroutine(_run: Any = spec.run, **arguments: Any) -> str:
                return str(await self._portal.acall(lambda: _run(arguments)))

            tools.append(
                StructuredTool.from_function(
                    func=func,
                    coroutine=coroutine,
                    name=spec.name,
                    description=spec.description,
                    args_schema=spec.parameters,
                )
            )
        return tools

    def close(self) -> None:
        """Close every session this history opened, then its event loop (idempotent)."""
        sessions, self._sessions = self._sessions, self._sessions[-1:]
        for session in sessions:
            if not session.closed:
                self._portal.call(session.close)
        self._portal.close()


def to_openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI chat messages; system messages are left out (the
    chain owns its prompt)."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": _text(message, index)})
        elif isinstance(message, AIMessage):
            assistant: dict[str, Any] = {"role": "assistant", "content": _text(message, index)}
            if message.tool_calls:
                assistant["content"] = assistant["content"] or None
                assistant["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                    }
                    for call in message.tool_calls
                ]
            out.append(assistant)
        elif isinstance(message, ToolMessage):
            content = _text(message, index)
            if message.status == "error":
                content = f"Error: {content}"
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": content})
        else:
            raise InvalidArgumentError(
                f"messages[{index}]: {type(message).__name__} is not supported "
                "(human, AI, tool and system messages are)"
            )
    return out


def _text(message: BaseMessage, index: int) -> str:
    if isinstance(message.content, str):
        return message.content
    texts = []
    for block in message.content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif not (isinstance(block, dict) and block.get("type") in ("tool_use", "reasoning")):
            raise InvalidArgumentError(
                f"messages[{index}]: only text content is supported yet, got {block!r:.80}"
            )
    return "".join(texts)


def from_openai_messages(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """OpenAI chat messages (a mnesis window) as LangChain messages, system left out."""
    out: list[BaseMessage] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else _joined(content)
        if role == "user":
            out.append(HumanMessage(content=text))
        elif role == "assistant":
            calls = [
                {
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"] or "{}"),
                    "type": "tool_call",
                }
                for call in message.get("tool_calls") or []
            ]
            out.append(AIMessage(content=text, tool_calls=calls))
        elif role == "tool":
            out.append(ToolMessage(content=text, tool_call_id=str(message["tool_call_id"])))
    return out


def _joined(content: Any) -> str:
    if not content:
        return ""
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
