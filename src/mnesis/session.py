"""``MnesisSession``: the public entry point of mnesis.

Ordering guarantees of a turn (``send`` / ``stream``):

1. The user message and its context row are committed before the model is called.
2. If the context is over the hard threshold, compaction finishes before the
   context is built, so an over-limit context never reaches a model.
3. The assistant row exists (as a stub) before streaming starts; its parts and
   token counts are written when the stream ends. A crash mid-stream leaves the
   user message and the stub, never a half-written row.
4. Soft-threshold compaction starts in the background after the turn.

Turns of one session are serialised; different sessions run concurrently and
share one database connection per file through :class:`~mnesis.store.StorePool`.

The class is a facade over the collaborators in :mod:`mnesis._session`, wired in
:func:`mnesis._session.wiring.wire`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, overload

from mnesis._session.lifecycle import WriteTracker, close_session, open_new, open_stored
from mnesis._session.opening import StoredSession
from mnesis._session.tools import ToolLoop, lcm_tool_definitions
from mnesis._session.turns import PartCallback as PartCallback  # re-exported
from mnesis._session.wiring import wire
from mnesis.compaction.engine import CompactionEngine
from mnesis.config import MnesisConfig
from mnesis.context.builder import BuiltContext, ContextFormat
from mnesis.errors import InvalidArgumentError
from mnesis.events.bus import EventBus, EventHandler, MnesisEvent
from mnesis.files import FileHandleResult
from mnesis.llm import ClientLike, LLMClient
from mnesis.models.message import (
    CompactionResult,
    FinishReason,
    MessageWithParts,
    RecordResult,
    TextDelta,
    TurnComplete,
    TurnResult,
    TurnSnapshot,
)
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import MessagePart
from mnesis.models.tokens import TokenUsage
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.results import DescribeResult, ExpandQueryResult, ExpandResult, GrepResult
from mnesis.store.base import SessionRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.store.pool import StorePool

__all__ = ["MnesisSession", "PartCallback"]


class MnesisSession:
    """A long-running conversation whose context mnesis manages.

    Create one with :meth:`create` / :meth:`open`, or reopen it with :meth:`load`.
    """

    def __init__(
        self,
        *,
        record: SessionRecord,
        store: ImmutableStore,
        config: MnesisConfig,
        llm: LLMClient,
        context_tokens: int,
        token_usage: TokenUsage,
        pool: StorePool,
        db_path: str,
        event_bus: EventBus | None = None,
    ) -> None:
        self._record = record
        self._store = store
        self._config = config
        self._llm = llm
        self._pool = pool
        self._db_path = db_path
        self._bus = event_bus if event_bus is not None else EventBus()
        self._writes = WriteTracker(record.id)
        self._wiring = wire(
            record=record,
            store=store,
            config=config,
            llm=llm,
            bus=self._bus,
            context_tokens=context_tokens,
            token_usage=token_usage,
            spawn=self._spawn_sub_agent,
        )

    # -- construction -------------------------------------------------------
    @classmethod
    async def create(
        cls,
        *,
        model: str,
        agent: str = "default",
        parent_id: str | None = None,
        config: MnesisConfig | None = None,
        system_prompt: str = "You are a helpful assistant.",
        db_path: str | None = None,
        pool: StorePool | None = None,
        llm: ClientLike | None = None,
        event_bus: EventBus | None = None,
    ) -> MnesisSession:
        """Create and persist a new session.

        ``llm`` is any :class:`~mnesis.llm.LLMClient` or a plain async function
        ``(messages) -> str`` (used for compaction summaries and ``send``); by default
        ``fake/...`` models and ``MNESIS_MOCK_LLM=1`` use the built-in fake, anything
        else litellm, imported only when a model is first called: creating, loading,
        recording, building the context and extractive compaction never need it. Pass an
        ``event_bus`` with handlers already subscribed to receive ``session.created``.
        Raises ``ValueError`` if both ``db_path`` and a non-default ``config.store.db_path``
        are given.
        """
        stored, client = await open_new(
            model=model,
            agent=agent,
            parent_id=parent_id,
            config=config,
            system_prompt=system_prompt,
            db_path=db_path,
            pool=pool,
            llm=llm,
        )
        session = cls._of(stored, client, event_bus)
        session._writes.wrote = True
        session._bus.publish(
            MnesisEvent.SESSION_CREATED, {"session_id": session.id, "model": model}
        )
        return session

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, **kwargs: Any) -> AsyncIterator[MnesisSession]:
        """``async with MnesisSession.open(model=...) as session:`` (closes on exit).

        Takes the keywords of :meth:`create`, or ``session_id=`` to :meth:`load` instead.
        """
        session_id = kwargs.pop("session_id", None)
        if session_id is not None:
            session = await cls.load(session_id, **kwargs)
        else:
            session = await cls.create(**kwargs)
        try:
            yield session
        finally:
            await session.close()

    @classmethod
    async def load(
        cls,
        session_id: str,
        config: MnesisConfig | None = None,
        db_path: str | None = None,
        pool: StorePool | None = None,
        llm: ClientLike | None = None,
        event_bus: EventBus | None = None,
    ) -> MnesisSession:
        """Reopen a stored session (``llm`` as for :meth:`create`); raises
        :class:`~mnesis.errors.SessionNotFoundError`."""
        return cls._of(*await open_stored(session_id, config, db_path, pool, llm), event_bus)

    @classmethod
    def _of(cls, stored: StoredSession, llm: LLMClient, bus: EventBus | None) -> MnesisSession:
        session = cls(
            record=stored.record,
            store=stored.store,
            config=stored.config,
            llm=llm,
            context_tokens=stored.context_tokens,
            token_usage=stored.token_usage,
            pool=stored.pool,
            db_path=stored.db_path,
            event_bus=bus,
        )
        session._bus.subscribe(MnesisEvent.MESSAGE_CREATED, session._writes.on_message_created)
        return session

    async def spawn_child(self, *, agent: str, system_prompt: str) -> MnesisSession:
        """A new session whose ``parent_id`` is this one, on the same store and model."""
        self._wiring.state.check_open()
        config = self._config.model_copy(deep=True)
        config.store.db_path = self._db_path
        return await MnesisSession.create(
            model=self.model,
            agent=agent,
            parent_id=self.id,
            config=config,
            system_prompt=system_prompt,
            pool=self._pool,
            llm=self._llm,
        )

    # -- properties ---------------------------------------------------------
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
        """True once :meth:`close` was called."""
        return self._wiring.state.closed

    @property
    def retrieval(self) -> RetrievalEngine:
        """The session's retrieval engine (describe / grep / expand)."""
        return self._wiring.retrieval

    def subscribe(self, event: MnesisEvent | None, handler: EventHandler) -> None:
        """Call ``handler(event, payload)`` for ``event`` (``None``: all events)."""
        self._bus.subscribe(event, handler)

    # -- turns --------------------------------------------------------------
    async def send(
        self,
        message: str | list[MessagePart],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_part: PartCallback | None = None,
        system_prompt: str | None = None,
        run_lcm_tools: bool = False,
    ) -> TurnResult:
        """Send a user message to the model and persist the whole turn.

        Raises :class:`~mnesis.errors.LLMError` when the model fails (the user message
        and the assistant stub stay stored, the stub marked ``error``).
        """
        return await self._wiring.turns.send(
            message,
            tools=tools,
            on_part=on_part,
            system_prompt=system_prompt,
            run_lcm_tools=run_lcm_tools,
        )

    def stream(
        self,
        message: str | list[MessagePart],
        *,
        tools: list[dict[str, Any]] | None = None,
        system_prompt: str | None = None,
        run_lcm_tools: bool = False,
    ) -> AsyncIterator[TextDelta | TurnComplete]:
        """Like :meth:`send`, yielding :class:`TextDelta` as text arrives, then
        one :class:`TurnComplete`.

        With ``run_lcm_tools=True`` the session executes the model's ``lcm_*`` tool
        calls itself and calls the model again, up to ``session.max_tool_rounds``
        times; the result is the last round's.
        """
        return self._wiring.turns.stream(
            message, tools=tools, system_prompt=system_prompt, run_lcm_tools=run_lcm_tools
        )

    async def record(
        self,
        user_message: str | list[MessagePart],
        assistant_response: str | list[MessagePart],
        *,
        tokens: TokenUsage | None = None,
        finish_reason: FinishReason | str = "stop",
    ) -> RecordResult:
        """Persist a turn made with your own model client (both messages, one transaction).

        Tool calls go in ``assistant_response`` as :class:`ToolPart` objects.
        """
        return await self._wiring.turns.record(
            user_message, assistant_response, tokens=tokens, finish_reason=finish_reason
        )

    async def complete_tool_call(
        self, tool_call_id: str, *, output: str | None = None, error: str | None = None
    ) -> None:
        """Store the result of a tool call the model asked for (``pending`` → done)."""
        await self._wiring.turns.complete_tool_call(tool_call_id, output=output, error=error)

    def history(self) -> list[TurnSnapshot]:
        """Snapshots of the recent turns made through this session object, oldest first.

        At most the last 1,000 turns (``mnesis._session.turns.HISTORY_WINDOW``) are kept,
        so a long-running session's memory does not grow with its length; ``turn_index``
        keeps counting from the first turn of this object. Every turn stays in the
        store: :meth:`messages` returns them all.
        """
        return list(self._wiring.turns.snapshots)

    # -- context and compaction ---------------------------------------------
    @overload
    async def context_for_next_turn(
        self,
        system_prompt: str | None = None,
        *,
        format: Literal["openai", "text"] = "openai",
        cache_control: Literal[False] = False,
    ) -> list[dict[str, Any]]: ...

    @overload
    async def context_for_next_turn(
        self,
        system_prompt: str | None = None,
        *,
        format: Literal["anthropic"],
        cache_control: bool = False,
    ) -> dict[str, Any]: ...

    async def context_for_next_turn(
        self,
        system_prompt: str | None = None,
        *,
        format: ContextFormat = "openai",
        cache_control: bool = False,
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
        * ``"text"``: ``{"role", "content"}`` strings, tool calls written out as text.

        A tool call and its result are sent together or not at all; the only call sent
        without a result is a pending one in the last message. Summaries are user
        messages annotated with their IDs.
        """
        built = await self.build_context(system_prompt)
        return built.render(format, cache_control=cache_control)

    async def build_context(self, system_prompt: str | None = None) -> BuiltContext:
        """The assembled context of the next turn, with its token breakdown."""
        self._wiring.state.check_open()
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        prompt = self._record.system_prompt if system_prompt is None else system_prompt
        wiring = self._wiring
        return await wiring.builder.build(self.id, wiring.model_info, prompt, self._config)

    async def compact(self) -> CompactionResult:
        """Compact now (waits for a running compaction first). Never raises for model
        failures: the result says what happened."""
        self._wiring.state.check_open()
        return await self._wiring.gate.compact_now()

    async def messages(self) -> list[MessageWithParts]:
        """Every stored message of the session, summaries included, in order."""
        return await self._store.get_messages(self.id, include_summaries=True)

    async def conversation_messages(self) -> list[MessageWithParts]:
        """The stored conversation without summary messages, in order."""
        return await self._store.get_messages(self.id, include_summaries=False)

    # -- retrieval and files ------------------------------------------------
    async def describe(self, object_id: str) -> DescribeResult:
        """Describe a summary, message or file ID (see :meth:`RetrievalEngine.describe`)."""
        self._wiring.state.check_open()
        return await self._wiring.retrieval.describe(object_id)

    async def grep(self, query: str, **kwargs: Any) -> GrepResult:
        """Search this session's history (see :meth:`RetrievalEngine.grep`)."""
        self._wiring.state.check_open()
        return await self._wiring.retrieval.grep(query, **kwargs)

    async def expand(
        self,
        summary_id: str,
        *,
        depth: int = 1,
        include_messages: bool = True,
        token_cap: int | None = None,
    ) -> ExpandResult:
        """Open a summary (see :meth:`RetrievalEngine.expand`)."""
        self._wiring.state.check_open()
        return await self._wiring.retrieval.expand(
            summary_id, depth=depth, include_messages=include_messages, token_cap=token_cap
        )

    async def expand_query(
        self,
        prompt: str,
        *,
        query: str | None = None,
        summary_ids: Sequence[str] | None = None,
        token_cap: int | None = None,
        max_answer_tokens: int = 800,
        timeout: float = 120.0,
    ) -> ExpandQueryResult:
        """Answer a narrow question about compacted history with a bounded sub-agent
        (a child session granted only the matching summaries)."""
        self._wiring.state.check_open()
        return await self._wiring.expander.expand_query(
            prompt,
            query=query,
            summary_ids=summary_ids,
            token_cap=token_cap,
            max_answer_tokens=max_answer_tokens,
            timeout=timeout,
        )

    async def handle_file(self, path: str) -> FileHandleResult:
        """Inline a small file or turn a large one into a content-addressed ``FileRefPart``.

        Put ``result.file_ref`` (or a ``TextPart`` of ``result.inline_content``) into the
        next ``send``/``record``; the file's ID then flows into summaries and
        ``describe(file_id)`` returns its structural summary.
        """
        self._wiring.state.check_open()
        return await self._wiring.files.handle_file(path, session_id=self.id)

    # -- agent tools --------------------------------------------------------
    def lcm_tool_definitions(
        self, *, format: str = "openai", exclude: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """Definitions of ``lcm_grep``/``lcm_describe``/``lcm_expand``/``lcm_expand_query``
        in the ``"openai"`` (litellm) or ``"anthropic"`` format."""
        return lcm_tool_definitions(format=format, exclude=exclude)

    async def execute_tool(self, name: str, arguments: dict[str, Any] | str | None) -> str:
        """Run an ``lcm_*`` tool call against this session; returns JSON for the model.

        Errors are reported inside the JSON (``{"error": ...}``), never raised.
        """
        self._wiring.state.check_open()
        return await self._wiring.tools.execute(name, arguments)

    # -- closing ------------------------------------------------------------
    async def close(self, *, abort_compaction: bool = False) -> None:
        """Finish (or abort) background compaction, mark the session closed (which moves its
        ``updated_at``) if this object created it or added to it, then release the store.
        Idempotent."""
        if self._wiring.state.closed:
            return
        self._wiring.state.closed = True
        await close_session(
            self._wiring,
            self._store,
            self._bus,
            self.id,
            wrote=self._writes.wrote,
            abort_compaction=abort_compaction,
        )

    async def __aenter__(self) -> MnesisSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- wiring -------------------------------------------------------------
    async def _spawn_sub_agent(
        self, agent: str, system_prompt: str
    ) -> tuple[MnesisSession, ToolLoop]:
        child = await self.spawn_child(agent=agent, system_prompt=system_prompt)
        return child, child._wiring.tools
