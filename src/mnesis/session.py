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
from typing import Any, Literal, Unpack

from mnesis._session.lifecycle import (
    Opening,
    WriteTracker,
    close_session,
    open_new,
    open_stored,
)
from mnesis._session.open_options import SessionOpenOptions
from mnesis._session.opening import StoredSession
from mnesis._session.tools import ToolLoop, lcm_tool_definitions
from mnesis._session.turns import PartCallback as PartCallback  # re-exported
from mnesis._session.view import SessionView
from mnesis._session.wiring import wire
from mnesis.config import MnesisConfig
from mnesis.errors import InvalidArgumentError
from mnesis.errors import SessionClosedError as SessionClosedError  # 0.4.0's path
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.files import FileHandleResult
from mnesis.llm import ClientLike, LLMClient, check_tools
from mnesis.models.ids import new_id
from mnesis.models.message import (
    CompactionResult,
    FinishReason,
    RecordResult,
    TextDelta,
    TurnComplete,
    TurnResult,
)
from mnesis.models.parts import MessagePart
from mnesis.models.tokens import TokenUsage
from mnesis.retrieval.results import ExpandQueryResult
from mnesis.store.pool import StorePool

__all__ = ["MnesisSession", "PartCallback"]
__all__ += ["SessionClosedError", "make_id"]  # 0.4.0's names at this path (issue 31)


class MnesisSession(SessionView):
    """A long-running conversation whose context mnesis manages.

    Create one with :meth:`create` / :meth:`open`, or reopen it with :meth:`load`. What
    it is and holds (``id``, ``model``, ``token_usage``, ``messages()``, ...) comes from
    :class:`~mnesis._session.view.SessionView`.
    """

    def __init__(
        self,
        stored: StoredSession,
        llm: LLMClient,
        event_bus: EventBus | None = None,
        *legacy: object,
    ) -> None:
        """A session object over an already stored session: use :meth:`create`,
        :meth:`load` or :meth:`open` instead. (0.4.0's constructor, taking the session's
        ID and its collaborators, is refused with :class:`~mnesis.errors.InvalidArgumentError`:
        the collaborators are wired here, from the stored session.)"""
        if legacy or not isinstance(stored, StoredSession):
            raise InvalidArgumentError(
                "MnesisSession(...) is not built from collaborators: use "
                "await MnesisSession.create(model=...), await MnesisSession.load(session_id) "
                "or async with MnesisSession.open(...)"
            )
        bus = event_bus if event_bus is not None else EventBus()
        wiring = wire(
            stored, llm, bus, spawn=self._spawn_sub_agent, expand_tool=self._expand_query_tool
        )
        super().__init__(
            record=stored.record, store=stored.store, config=stored.config, bus=bus, wiring=wiring
        )
        self._llm = llm
        self._pool = stored.pool
        self._db_path = stored.db_path
        self._writes = WriteTracker(stored.record.id)
        bus.subscribe(MnesisEvent.MESSAGE_CREATED, self._writes.on_message_created)

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
        context_limit: int | None = None,
        max_output_tokens: int | None = None,
    ) -> MnesisSession:
        """Create and persist a new session.

        ``context_limit`` / ``max_output_tokens`` state the model's window (tokens): give
        them for a local or unknown model (otherwise 128k is assumed, with a warning);
        they go into ``config.model_overrides`` and are kept with the session. Compaction
        settings you leave unset (buffer, thresholds, prune windows, fresh tail, summary
        targets) scale with that window; settings you set are used as given.

        ``llm`` is any :class:`~mnesis.llm.LLMClient` or a plain async function
        ``(messages) -> str`` (used for compaction summaries and ``send``); by default
        ``fake/...`` models and ``MNESIS_MOCK_LLM=1`` use the built-in fake, anything
        else litellm, imported only when a model is first called: creating, loading,
        recording, building the context and extractive compaction never need it. Pass an
        ``event_bus`` with handlers already subscribed to receive ``session.created``.
        Raises ``ValueError`` if both ``db_path`` and a non-default ``config.store.db_path``
        are given.
        """
        opening = Opening(config, db_path, pool, llm, context_limit, max_output_tokens)
        stored, client = await open_new(
            opening, model=model, agent=agent, parent_id=parent_id, system_prompt=system_prompt
        )
        session = cls(stored, client, event_bus)
        session._writes.wrote = True
        session._bus.publish(
            MnesisEvent.SESSION_CREATED, {"session_id": session.id, "model": model}
        )
        return session

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, **kwargs: Unpack[SessionOpenOptions]) -> AsyncIterator[MnesisSession]:
        """``async with MnesisSession.open(model=...) as session:`` (closes on exit).

        Takes the keywords of :meth:`create`, or ``session_id=`` to :meth:`load` instead.
        """
        options: dict[str, Any] = dict(kwargs)
        session_id = options.pop("session_id", None)
        if session_id is not None:
            session = await cls.load(session_id, **options)
        else:
            session = await cls.create(**options)
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
        context_limit: int | None = None,
        max_output_tokens: int | None = None,
    ) -> MnesisSession:
        """Reopen a stored session (``llm`` and the window as for :meth:`create`; a window
        given here applies to this run); raises :class:`~mnesis.errors.SessionNotFoundError`."""
        opening = Opening(config, db_path, pool, llm, context_limit, max_output_tokens)
        return cls(*await open_stored(session_id, opening), event_bus)

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

    # -- turns --------------------------------------------------------------
    async def send(
        self,
        message: str | list[MessagePart] | None = None,
        *,
        tools: list[dict[str, Any]] | None = None,
        on_part: PartCallback | None = None,
        system_prompt: str | None = None,
        run_lcm_tools: bool = False,
    ) -> TurnResult:
        """Send a user message to the model and persist the whole turn.

        Without a ``message`` the current turn continues: after the caller answered the
        model's tool calls with :meth:`complete_tool_call` (or after a failed model
        call) the model is called again on the stored context, and its reply joins the
        same turn. :class:`~mnesis.errors.InvalidArgumentError` if there is nothing to
        continue (a call still without a result, or a turn already answered).

        ``tools`` offered to a plain-function ``llm=`` that has no ``tools`` parameter
        raise :class:`~mnesis.errors.ToolsNotSupportedError` (before anything is stored).
        Raises :class:`~mnesis.errors.LLMError` when the model fails (the user message
        and the assistant stub stay stored, the stub marked ``error``).
        """
        check_tools(self._llm, tools)
        return await self._wiring.turns.send(
            message,
            tools=tools,
            on_part=on_part,
            system_prompt=system_prompt,
            run_lcm_tools=run_lcm_tools,
        )

    def stream(
        self,
        message: str | list[MessagePart] | None = None,
        *,
        tools: list[dict[str, Any]] | None = None,
        system_prompt: str | None = None,
        run_lcm_tools: bool = False,
    ) -> AsyncIterator[TextDelta | TurnComplete]:
        """Like :meth:`send`, yielding :class:`TextDelta` as text arrives, then
        one :class:`TurnComplete` (without a ``message``, the current turn continues).

        With ``run_lcm_tools=True`` the session executes the model's ``lcm_*`` tool
        calls itself and calls the model again, up to ``session.max_tool_rounds``
        times; the result is the last round's.
        """
        check_tools(self._llm, tools)
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
        """Persist a turn made with your own model client (one transaction).

        Tool calls go in ``assistant_response`` as :class:`ToolPart` objects, in the order
        they happened: a text (or reasoning) part after a tool part is a later round and is
        stored as its own assistant message, as ``send`` stores each model call, so
        ``[ToolPart(c1), TextPart("expanding"), ToolPart(c2), TextPart("FINAL")]`` comes
        back as ``c1`` → its result → ``"expanding"`` + ``c2`` → its result → ``"FINAL"``.
        ``RecordResult.assistant_message_id`` is the last round's message;
        ``message_ids`` lists them all.
        """
        return await self._wiring.turns.record(
            user_message, assistant_response, tokens=tokens, finish_reason=finish_reason
        )

    async def record_messages(
        self,
        messages: Sequence[Any],
        *,
        format: Literal["openai", "anthropic", "responses"] = "openai",
        tokens: TokenUsage | None = None,
        finish_reason: FinishReason | str | None = None,
    ) -> RecordResult:
        """Persist what your loop exchanged with a provider, in that provider's own shapes.

        ``messages`` are the messages of one turn, or the next ones of the open turn, as
        dicts or SDK objects (``model_dump(exclude_none=True)`` is taken):

        * ``"openai"`` (Chat Completions): ``user``, ``assistant`` (``content`` and/or
          ``tool_calls``), ``tool`` (``tool_call_id``) messages;
        * ``"anthropic"`` (Messages): alternating ``user`` / ``assistant`` messages, string
          or block content: ``text``, ``thinking`` / ``redacted_thinking``, ``tool_use``,
          and ``tool_result`` blocks first in a user message;
        * ``"responses"`` (the Responses API's input items, the OpenAI Agents SDK's session
          items): user / assistant ``message`` items, ``reasoning``, ``function_call``,
          ``function_call_output``.

        A user message (with text) starts a new turn; each assistant message (Responses:
        the assistant items up to the next output) is one round, stored as its own
        assistant message; each tool result is stored on its call. Messages that do not
        start with a user message continue the open turn (the newest user message and its
        rounds): assistant messages are new rounds of it, and results may answer calls an
        earlier ``record_messages`` / ``record`` / ``send`` stored. So an adapter may hand
        over items as a framework delivers them: ``[user]``, then ``[assistant with
        calls]``, then ``[results, final assistant]``.

        Everything is checked before anything is written (:class:`InvalidArgumentError`
        naming the message): shapes, roles (system / developer messages are refused: the
        system prompt is ``system_prompt``), non-text content (images, documents,
        built-in tools: not supported yet), duplicate call IDs, results that answer no
        call of the batch or a call of the session that has one already. The messages
        are stored in one transaction; results of calls stored earlier are written just
        before it, one by one as :meth:`complete_tool_call` does (a crash between leaves
        those results stored and the new messages not).

        Round trip: until a compaction changes the view, ``context_for_next_turn(format=F)``
        returns the messages recorded in format ``F`` exactly (after its system message),
        extra fields included (``id``, ``status``, ``annotations``, signatures, a raw
        ``arguments`` string); ``cache_control`` is dropped (the renderer places its own)
        and results come back in the order of their calls. Reasoning is sent back only in
        the format it was recorded in.

        ``tokens`` (the provider's usage) goes on the last assistant message stored
        (default: estimates); ``finish_reason`` too (default ``"stop"``, or
        ``"tool_calls"`` when it left calls unanswered).
        """
        return await self._wiring.turns.record_messages(
            messages, format=format, tokens=tokens, finish_reason=finish_reason
        )

    async def complete_tool_call(
        self, tool_call_id: str, *, output: str | None = None, error: str | None = None
    ) -> None:
        """Store the result of a tool call the model asked for (``pending`` → done)."""
        await self._wiring.turns.complete_tool_call(tool_call_id, output=output, error=error)

    # -- compaction ---------------------------------------------------------
    async def compact(self) -> CompactionResult:
        """Compact now (waits for a running compaction first). Never raises for model
        failures: the result says what happened."""
        self._wiring.state.check_open()
        return await self._wiring.gate.compact_now()

    # -- sub-agent and files ------------------------------------------------
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
            prompt, query, summary_ids, token_cap, max_answer_tokens, timeout
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

    async def _expand_query_tool(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return (await self.expand_query(**arguments)).model_dump()


def make_id(prefix: str) -> str:
    """0.4.0's ID maker: a new sortable ID with ``prefix`` (``sess``, ``msg``, ``part``,
    ...; see :func:`mnesis.models.ids.new_id`)."""
    return new_id(prefix)
