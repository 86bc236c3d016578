"""``SessionView``: the read side of a session, the base of :class:`mnesis.session.MnesisSession`.

It owns the fields it reads (set in its own ``__init__``) and needs nothing from the
facade: identity, configuration, counters, the collaborators a caller may reach, the
stored messages, the context of the next turn and the retrieval reads (describe, grep,
expand). Everything that writes or acts (turns, compaction, files, the sub-agent,
tools, closing) is in the facade.
"""

from __future__ import annotations

from typing import Any, Literal, Unpack, overload

from mnesis._session.wiring import Wiring
from mnesis.compaction.engine import CompactionEngine
from mnesis.config import MnesisConfig
from mnesis.context.builder import BuiltContext, ContextFormat
from mnesis.errors import InvalidArgumentError
from mnesis.events.bus import EventBus, EventHandler, MnesisEvent
from mnesis.models.message import MessageWithParts, TurnSnapshot
from mnesis.models.model_info import ModelInfo
from mnesis.models.tokens import TokenUsage
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.expand import ExpandOptions
from mnesis.retrieval.results import DescribeResult, ExpandResult, GrepResult
from mnesis.store.base import SessionRecord
from mnesis.store.immutable import ImmutableStore

__all__ = ["SessionView"]


class SessionView:
    """What a session is and holds, read without side effects."""

    def __init__(
        self,
        *,
        record: SessionRecord,
        store: ImmutableStore,
        config: MnesisConfig,
        bus: EventBus,
        wiring: Wiring,
    ) -> None:
        self._record = record
        self._store = store
        self._config = config
        self._bus = bus
        self._wiring = wiring

    @property
    def id(self) -> str:
        """The session ID (``sess_...``)."""
        return self._record.id

    @property
    def model(self) -> str:
        """The model string the session was created with."""
        return self._record.model

    @property
    def model_info(self) -> ModelInfo:
        """Limits of the session's model."""
        return self._wiring.model_info

    @property
    def config(self) -> MnesisConfig:
        """The session's configuration."""
        return self._config

    @property
    def store(self) -> ImmutableStore:
        """The store holding this session."""
        return self._store

    @property
    def token_usage(self) -> TokenUsage:
        """Cumulative model token usage of the session."""
        return self._wiring.turns.token_usage

    @property
    def context_tokens(self) -> int:
        """Estimated tokens of everything currently in the context view."""
        return self._wiring.meter.tokens

    @property
    def compaction_in_progress(self) -> bool:
        """True while a compaction task runs."""
        return self._wiring.engine.in_progress

    @property
    def event_bus(self) -> EventBus:
        """The session's event bus."""
        return self._bus

    @property
    def compaction_engine(self) -> CompactionEngine:
        """The session's compaction engine."""
        return self._wiring.engine

    @property
    def closed(self) -> bool:
        """True once :meth:`~mnesis.session.MnesisSession.close` was called."""
        return self._wiring.state.closed

    @property
    def retrieval(self) -> RetrievalEngine:
        """The session's retrieval engine (describe / grep / expand)."""
        return self._wiring.retrieval

    def subscribe(self, event: MnesisEvent | None, handler: EventHandler) -> None:
        """Call ``handler(event, payload)`` for ``event`` (``None``: all events)."""
        self._bus.subscribe(event, handler)

    def history(self) -> list[TurnSnapshot]:
        """Snapshots of the recent turns made through this session object, oldest first.

        At most the last 1,000 turns (``mnesis._session.turns.HISTORY_WINDOW``) are kept,
        so a long-running session's memory does not grow with its length; ``turn_index``
        keeps counting from the first turn of this object. Every turn stays in the
        store: :meth:`messages` returns them all.
        """
        return list(self._wiring.turns.snapshots)

    async def messages(self) -> list[MessageWithParts]:
        """Every stored message of the session, summaries included, in order."""
        return await self._store.get_messages(self.id, include_summaries=True)

    async def conversation_messages(self) -> list[MessageWithParts]:
        """The stored conversation without summary messages, in order."""
        return await self._store.get_messages(self.id, include_summaries=False)

    # -- the next context ---------------------------------------------------
    @overload
    async def context_for_next_turn(
        self,
        system_prompt: str | None = None,
        *,
        format: Literal["openai", "responses", "text"] = "openai",
        cache_control: Literal[False] = False,
        user: str | None = None,
    ) -> list[dict[str, Any]]: ...

    @overload
    async def context_for_next_turn(
        self,
        system_prompt: str | None = None,
        *,
        format: Literal["anthropic"],
        cache_control: bool = False,
        user: str | None = None,
    ) -> dict[str, Any]: ...

    async def context_for_next_turn(
        self,
        system_prompt: str | None = None,
        *,
        format: ContextFormat = "openai",
        cache_control: bool = False,
        user: str | None = None,
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The context the next model call would receive, in a provider's wire format.

        * ``"openai"`` (the default): OpenAI chat messages, system prompt first;
          assistant turns carry ``tool_calls`` and each result follows as a
          ``role: "tool"`` message with its ``tool_call_id``. It is the default because
          it is what ``send`` itself sends (through litellm, which translates it for
          every provider) and what the OpenAI SDK and every OpenAI-compatible server
          (vLLM, Ollama, LM Studio, ...) take as they are; without tool calls it is
          exactly the plain-text rendering.
        * ``"anthropic"``: ``{"system": ..., "messages": [...]}`` for the Messages API:
          ``tool_use`` / ``tool_result`` blocks (``is_error`` for failed tools), roles
          alternating. ``cache_control=True`` adds prompt-caching breakpoints after the
          system prompt, after the summaries and at the end.
        * ``"responses"``: OpenAI Responses input items, system prompt first:
          ``function_call`` / ``function_call_output`` items, ``reasoning`` items recorded
          from the Responses API.
        * ``"text"``: ``{"role", "content"}`` strings, tool calls written out as text.

        Each round of a turn (one model call: its text, reasoning and tool calls) is
        rendered in order, followed by its results; messages recorded with
        :meth:`~mnesis.session.MnesisSession.record_messages` in a format come back in
        that format exactly as they were recorded.

        ``user="..."`` appends the next user message by the format's rules, ready to
        send: for Anthropic it joins a trailing user turn of tool results (two user turns
        in a row are refused) and, with ``cache_control``, carries the last breakpoint.
        Record it later with the rest of the turn (``record_messages``).

        A tool call and its result are sent together or not at all; the only call sent
        without a result is a pending one in the last message. Summaries are user
        messages annotated with their IDs.
        """
        built = await self.build_context(system_prompt)
        return built.render(format, cache_control=cache_control, user=user)

    async def build_context(self, system_prompt: str | None = None) -> BuiltContext:
        """The assembled context of the next turn, with its token breakdown."""
        self._wiring.state.check_open()
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        prompt = self._record.system_prompt if system_prompt is None else system_prompt
        wiring = self._wiring
        return await wiring.builder.build(self.id, wiring.model_info, prompt, self._config)

    # -- retrieval ----------------------------------------------------------
    async def describe(self, object_id: str) -> DescribeResult:
        """Describe a summary, message or file ID (see :meth:`RetrievalEngine.describe`)."""
        self._wiring.state.check_open()
        return await self._wiring.retrieval.describe(object_id)

    async def grep(self, query: str, **kwargs: Any) -> GrepResult:
        """Search this session's history (see :meth:`RetrievalEngine.grep`)."""
        self._wiring.state.check_open()
        return await self._wiring.retrieval.grep(query, **kwargs)

    async def expand(self, summary_id: str, **options: Unpack[ExpandOptions]) -> ExpandResult:
        """Open a summary (see :meth:`RetrievalEngine.expand`)."""
        self._wiring.state.check_open()
        return await self._wiring.retrieval.expand(summary_id, **options)
