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
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from pydantic import ValidationError

from mnesis.compaction.engine import CompactionEngine
from mnesis.config import DEFAULT_DB_PATH, MnesisConfig
from mnesis.context.builder import BuiltContext, ContextBuilder
from mnesis.errors import (
    InvalidArgumentError,
    LLMError,
    LLMTimeoutError,
    MnesisError,
    SessionClosedError,
)
from mnesis.events.bus import EventBus, EventHandler, MnesisEvent
from mnesis.files import FileHandleResult, LargeFileHandler
from mnesis.llm import LLMClient, LLMRequest, resolve_client
from mnesis.models.ids import is_valid_id, new_id
from mnesis.models.message import (
    CompactionResult,
    ContextBreakdown,
    FinishReason,
    Message,
    MessageWithParts,
    RecordResult,
    Role,
    TextDelta,
    TurnComplete,
    TurnResult,
    TurnSnapshot,
)
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import (
    PART_TYPES,
    MessagePart,
    RetryPart,
    TextPart,
    ToolPart,
    ToolStatus,
    part_adapter,
)
from mnesis.models.tokens import TokenUsage
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.results import (
    DescribeResult,
    ExpandQueryResult,
    ExpandResult,
    GrepResult,
)
from mnesis.retrieval.tools import (
    LCM_TOOL_NAMES,
    anthropic_tools,
    execute_lcm_tool,
    openai_tools,
)
from mnesis.store.base import ImmutableStore, NewMessage, SessionRecord
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.pool import StorePool
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["MnesisSession"]

logger = logging.getLogger("mnesis.session")

PartCallback = Callable[[TextPart], Awaitable[None] | None]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _normalize(content: object, what: str) -> list[MessagePart]:
    """Validate user-supplied content into fresh parts (copies, without IDs)."""
    if isinstance(content, str):
        if not content.strip():
            raise InvalidArgumentError(f"{what} is empty")
        return [TextPart(text=content)]
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts: list[MessagePart] = []
        for index, item in enumerate(content):
            try:
                if isinstance(item, PART_TYPES):
                    part = part_adapter.validate_python(item.model_dump())
                elif isinstance(item, dict):
                    part = part_adapter.validate_python(item)
                else:
                    raise InvalidArgumentError(
                        f"{what}[{index}] must be a message part, got {type(item).__name__}"
                    )
            except ValidationError as exc:
                raise InvalidArgumentError(
                    f"{what}[{index}] is not a valid message part: {exc.errors()[0]['msg']}"
                ) from None
            parts.append(part.model_copy(deep=True, update={"id": None}))
        if not parts:
            raise InvalidArgumentError(f"{what} is empty")
        for part in parts:
            if isinstance(part, ToolPart):
                _check_json(part.input, f"{what}: input of tool call {part.tool_call_id!r}")
        return parts
    raise InvalidArgumentError(
        f"{what} must be a str or a list of message parts, got {type(content).__name__}"
    )


def _check_encodable(value: str, what: str) -> None:
    """Reject text that cannot be stored as UTF-8 (lone surrogates) in a plain column."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{what} contains characters that are not valid Unicode text: {exc.reason} "
            f"at position {exc.start}"
        ) from None


def _check_json(value: object, what: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{what} is not JSON-serialisable: {exc}") from None


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
        self._model_info = ModelInfo.from_model_string(record.model, config.model_overrides)
        self._estimator = TokenEstimator(self._model_info.encoding)
        self._dag = SummaryDAGStore(store)
        self._builder = ContextBuilder(store, self._dag, self._estimator)
        self._bus = event_bus if event_bus is not None else EventBus()
        self._retrieval = RetrievalEngine(
            store, record.id, estimator=self._estimator, config=config.retrieval
        )
        self._engine = CompactionEngine(
            store,
            self._dag,
            self._estimator,
            self._bus,
            config,
            session_model=record.model,
            llm=llm,
            on_commit=self._on_compaction_commit,
        )
        self._files: LargeFileHandler | None = None
        self._tool_engine = self._retrieval
        self._tool_token_cap: int | None = None
        self.tool_calls_run = 0
        self._pool = pool
        self._db_path = db_path
        self._context_tokens = context_tokens
        self._system_tokens = (
            self._estimator.estimate(record.system_prompt) + MESSAGE_OVERHEAD_TOKENS
        )
        self._context_stale = False
        self._token_usage = token_usage
        self._turns: list[TurnSnapshot] = []
        self._tool_signatures: deque[str] = deque(maxlen=config.session.doom_loop_threshold)
        self._lock: asyncio.Lock | None = None
        self._closed = False

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
        llm: LLMClient | None = None,
        event_bus: EventBus | None = None,
    ) -> MnesisSession:
        """Create and persist a new session.

        ``llm`` is any :class:`~mnesis.llm.LLMClient`; by default ``fake/...`` models and
        ``MNESIS_MOCK_LLM=1`` use the built-in fake, anything else litellm. Pass an
        ``event_bus`` with handlers already subscribed to receive ``session.created``.
        Raises ``ValueError`` if both ``db_path`` and a non-default ``config.store.db_path``
        are given.
        """
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty string, got {model!r}")
        if not isinstance(agent, str) or not agent:
            raise InvalidArgumentError(f"agent must be a non-empty string, got {agent!r}")
        if not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        for name, value in (("model", model), ("agent", agent), ("system_prompt", system_prompt)):
            _check_encodable(value, name)
        if parent_id is not None and not is_valid_id(parent_id, "sess"):
            raise InvalidArgumentError(f"parent_id {parent_id!r} is not a session ID")
        cfg = cls._resolve_config(config, db_path)
        client = resolve_client(model, llm)
        pool = pool or StorePool.default()
        store = await pool.acquire(cfg.store, db_path=db_path)
        now = _now_ms()
        record = SessionRecord(
            id=new_id("sess"),
            model=model,
            agent=agent,
            parent_id=parent_id,
            system_prompt=system_prompt,
            created_at=now,
            updated_at=now,
            config=cfg.model_dump(mode="json", exclude={"store"}),
        )
        try:
            await store.create_session(record)
        except BaseException:
            await store.close()
            raise
        session = cls(
            record=record,
            store=store,
            config=cfg,
            llm=client,
            context_tokens=0,
            token_usage=TokenUsage(),
            pool=pool,
            db_path=db_path or cfg.store.db_path,
            event_bus=event_bus,
        )
        session._bus.publish(MnesisEvent.SESSION_CREATED, {"session_id": record.id, "model": model})
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
        llm: LLMClient | None = None,
        event_bus: EventBus | None = None,
    ) -> MnesisSession:
        """Reopen a stored session; raises :class:`~mnesis.errors.SessionNotFoundError`."""
        if not isinstance(session_id, str):
            raise InvalidArgumentError(
                f"session_id must be a string, got {type(session_id).__name__}"
            )
        if not is_valid_id(session_id, "sess"):
            raise InvalidArgumentError(
                f"{session_id[:80]!r} is not a session ID (sess_ followed by 26 characters)"
            )
        cfg = cls._resolve_config(config, db_path)
        pool = pool or StorePool.default()
        store = await pool.acquire(cfg.store, db_path=db_path)
        try:
            record = await store.get_session(session_id)
            context_tokens = await store.context_token_total(session_id)
            usage = await store.session_token_usage(session_id)
        except BaseException:
            await store.close()
            raise
        if config is None and record.config:
            # Reopen with the configuration the session was created with (its window,
            # thresholds and targets); the store section stays the caller's.
            try:
                cfg = MnesisConfig(**{**record.config, "store": cfg.store})
            except MnesisError:
                logger.warning("stored config of %s is invalid; using defaults", session_id)
        return cls(
            record=record,
            store=store,
            config=cfg,
            llm=resolve_client(record.model, llm),
            context_tokens=context_tokens,
            token_usage=usage,
            pool=pool,
            db_path=db_path or cfg.store.db_path,
            event_bus=event_bus,
        )

    @staticmethod
    def _resolve_config(config: MnesisConfig | None, db_path: str | None) -> MnesisConfig:
        if config is not None and not isinstance(config, MnesisConfig):
            raise InvalidArgumentError(
                f"config must be a MnesisConfig, got {type(config).__name__}"
            )
        if db_path is not None:
            if not isinstance(db_path, str) or not db_path.strip() or "\x00" in db_path:
                raise InvalidArgumentError(f"db_path must be a non-empty path, got {db_path!r}")
            if config is not None and config.store.db_path != DEFAULT_DB_PATH:
                raise InvalidArgumentError(
                    "give either db_path or config.store.db_path, not both "
                    f"({db_path!r} vs {config.store.db_path!r})"
                )
        return config if config is not None else MnesisConfig.from_env()

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
        return self._model_info

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
        return self._token_usage

    @property
    def context_tokens(self) -> int:
        """Estimated tokens of everything currently in the context view."""
        return self._context_tokens

    @property
    def compaction_in_progress(self) -> bool:
        """True while a compaction task runs."""
        return self._engine.in_progress

    @property
    def event_bus(self) -> EventBus:
        """The session's event bus."""
        return self._bus

    @property
    def compaction_engine(self) -> CompactionEngine:
        """The session's compaction engine."""
        return self._engine

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    @property
    def retrieval(self) -> RetrievalEngine:
        """The session's retrieval engine (describe / grep / expand)."""
        return self._retrieval

    async def describe(self, object_id: str) -> DescribeResult:
        """Describe a summary, message or file ID (see :meth:`RetrievalEngine.describe`)."""
        self._check_open()
        return await self._retrieval.describe(object_id)

    async def grep(self, query: str, **kwargs: Any) -> GrepResult:
        """Search this session's history (see :meth:`RetrievalEngine.grep`)."""
        self._check_open()
        return await self._retrieval.grep(query, **kwargs)

    async def expand(
        self,
        summary_id: str,
        *,
        depth: int = 1,
        include_messages: bool = True,
        token_cap: int | None = None,
    ) -> ExpandResult:
        """Open a summary (see :meth:`RetrievalEngine.expand`)."""
        self._check_open()
        return await self._retrieval.expand(
            summary_id, depth=depth, include_messages=include_messages, token_cap=token_cap
        )

    async def handle_file(self, path: str) -> FileHandleResult:
        """Inline a small file or turn a large one into a content-addressed ``FileRefPart``.

        Put ``result.file_ref`` (or a ``TextPart`` of ``result.inline_content``) into the
        next ``send``/``record``; the file's ID then flows into summaries and
        ``describe(file_id)`` returns its structural summary.
        """
        self._check_open()
        if self._files is None:
            self._files = LargeFileHandler(self._store, self._estimator, self._config.file)
        return await self._files.handle_file(path, session_id=self.id)

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
        if on_part is not None and not callable(on_part):
            raise InvalidArgumentError(f"on_part must be callable, got {type(on_part).__name__}")
        result: TurnResult | None = None
        async for item in self.stream(
            message, tools=tools, system_prompt=system_prompt, run_lcm_tools=run_lcm_tools
        ):
            if isinstance(item, TextDelta):
                if on_part is not None:
                    outcome = on_part(TextPart(text=item.text))
                    if inspect.isawaitable(outcome):
                        await outcome
            else:
                result = item.result
        assert result is not None
        return result

    async def stream(
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
        self._check_open()
        parts = _normalize(message, "message")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        if tools is not None and not isinstance(tools, list):
            raise InvalidArgumentError("tools must be a list of tool definitions")
        prompt = self._record.system_prompt if system_prompt is None else system_prompt
        async with self._turn_lock():
            user = await self._append("user", parts)
            self._publish_message(user)
            compaction = await self._ensure_under_hard_limit()
            rounds = 0
            while True:
                holder: list[TurnResult] = []
                round_stream = self._model_round(user.id, prompt, tools, compaction, holder)
                async with contextlib.aclosing(round_stream) as deltas:
                    async for delta in deltas:
                        yield delta
                result = holder[0]
                lcm_calls = [c for c in result.tool_calls if c.tool_name in LCM_TOOL_NAMES]
                other_calls = len(result.tool_calls) - len(lcm_calls)
                if (
                    not run_lcm_tools
                    or not lcm_calls
                    or other_calls
                    or rounds >= self._config.session.max_tool_rounds
                ):
                    # Any call mnesis cannot run itself goes back to the caller.
                    break
                for call in lcm_calls:
                    output = await self.execute_tool(call.tool_name, call.input)
                    assert call.id is not None
                    await self._complete_tool_part(call.id, result.message_id, output, None)
                rounds += 1
                compaction = await self._ensure_under_hard_limit()
        yield TurnComplete(result=result)

    async def _model_round(
        self,
        user_id: str,
        prompt: str,
        tools: list[dict[str, Any]] | None,
        compaction: CompactionResult | None,
        holder: list[TurnResult],
    ) -> AsyncGenerator[TextDelta, None]:
        """One model call: build, stub, stream, persist. Appends the result to ``holder``."""
        built = await self._builder.build(self.id, self._model_info, prompt, self._config)
        assistant = self._new_message("assistant", parent_id=user_id)
        await self._store.append_message(assistant, [])
        request = LLMRequest(
            model=self.model,
            messages=built.to_dicts(),
            max_tokens=self._model_info.max_output_tokens,
            tools=tools,
        )
        texts: list[str] = []
        tool_parts: list[ToolPart] = []
        finish: str = FinishReason.STOP
        usage = TokenUsage()
        settled = False
        timeout = self._config.session.model_timeout_seconds
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        chunks = self._llm.stream(request).__aiter__()
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError
                try:
                    # The timeout wraps only the wait for the next chunk, never
                    # the consumer's code between yields.
                    chunk = await asyncio.wait_for(anext(chunks), remaining)
                except StopAsyncIteration:
                    break
                if chunk.text:
                    texts.append(chunk.text)
                    yield TextDelta(message_id=assistant.id, text=chunk.text)
                for call in chunk.tool_calls:
                    tool_parts.append(
                        ToolPart(
                            tool_name=call.name or "unknown",
                            tool_call_id=call.id or new_id("part"),
                            input=call.arguments,
                            status=ToolStatus(state="pending", started_at=_now_ms()),
                        )
                    )
                if chunk.finish_reason:
                    finish = chunk.finish_reason
                if chunk.usage is not None:
                    usage = chunk.usage
            settled = True
        except TimeoutError as exc:
            settled = True
            await self._fail_turn(assistant, texts, "timeout")
            raise LLMTimeoutError(f"model {self.model} did not finish within {timeout}s") from exc
        except MnesisError as exc:
            settled = True
            await self._fail_turn(assistant, texts, str(exc))
            raise
        except Exception as exc:
            settled = True
            await self._fail_turn(assistant, texts, f"{type(exc).__name__}: {exc}")
            raise LLMError(f"model {self.model} failed: {exc}") from exc
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
            if not settled:
                # Cancelled or abandoned mid-stream: keep what arrived.
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._fail_turn(assistant, texts, "interrupted"))
        result = await self._finish_assistant(
            assistant, "".join(texts), tool_parts, finish, usage, built, compaction, user_id
        )
        holder.append(result)

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
        self._check_open()
        user_parts = _normalize(user_message, "user_message")
        assistant_parts = _normalize(assistant_response, "assistant_response")
        if tokens is not None and not isinstance(tokens, TokenUsage):
            raise InvalidArgumentError(f"tokens must be a TokenUsage, got {type(tokens).__name__}")
        if not isinstance(finish_reason, str) or not finish_reason.strip():
            raise InvalidArgumentError(
                f"finish_reason must be a FinishReason or a non-empty string, got {finish_reason!r}"
            )
        reason = str(
            finish_reason.value if isinstance(finish_reason, FinishReason) else finish_reason
        )
        async with self._turn_lock():
            user = self._new_message("user")
            user_tokens = self._estimate(user, user_parts)
            assistant = self._new_message("assistant", parent_id=user.id)
            assistant_tokens = self._estimate(assistant, assistant_parts)
            usage = tokens or TokenUsage(
                input=user.token_estimate,
                output=assistant.token_estimate,
                total=user.token_estimate + assistant.token_estimate,
            )
            assistant.tokens = usage
            assistant.finish_reason = reason
            await self._store.append_messages(
                [
                    NewMessage(user, user_parts, user_tokens),
                    NewMessage(assistant, assistant_parts, assistant_tokens),
                ]
            )
            self._context_tokens += user.token_estimate + assistant.token_estimate
            self._token_usage = self._token_usage + usage
            self._publish_message(user)
            doom = self._check_doom_loop([p for p in assistant_parts if isinstance(p, ToolPart)])
            self._publish_message(assistant)
            await self._ensure_under_hard_limit()
            triggered = await self._after_turn()
            self._turns.append(
                TurnSnapshot(
                    turn_index=len(self._turns),
                    user_message_id=user.id,
                    assistant_message_id=assistant.id,
                    context=ContextBreakdown(
                        total=self._context_tokens, messages=self._context_tokens
                    ),
                    tokens=usage,
                    compaction_triggered=triggered,
                    created_at=assistant.created_at,
                )
            )
        return RecordResult(
            user_message_id=user.id,
            assistant_message_id=assistant.id,
            tokens=usage,
            compaction_triggered=triggered,
            doom_loop_detected=doom,
        )

    async def complete_tool_call(
        self, tool_call_id: str, *, output: str | None = None, error: str | None = None
    ) -> None:
        """Store the result of a tool call the model asked for (``pending`` → done)."""
        self._check_open()
        if (output is None) == (error is None):
            raise InvalidArgumentError("give exactly one of output= or error=")
        text = output if output is not None else error
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"tool {'output' if output is not None else 'error'} must be a string, "
                f"got {type(text).__name__}"
            )
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise InvalidArgumentError("tool_call_id must be a non-empty string")
        part_id, message_id = await self._store.find_tool_part(self.id, tool_call_id)
        await self._complete_tool_part(part_id, message_id, output, error)

    async def _complete_tool_part(
        self, part_id: str, message_id: str, output: str | None, error: str | None
    ) -> None:
        message = await self._store.get_message(message_id)
        for part in message.parts:
            if isinstance(part, ToolPart) and part.id == part_id:
                part.status.state = "completed" if error is None else "error"
                part.output = output if output is not None else part.output
                part.error_message = error if error is not None else part.error_message
        estimate = self._estimator.estimate_message(message)
        await self._store.update_part_status(
            part_id,
            state="completed" if error is None else "error",
            output=output,
            error_message=error,
            completed_at=_now_ms(),
            message_token_estimate=estimate,
        )
        self._context_tokens += estimate - message.message.token_estimate

    # -- agent tools --------------------------------------------------------
    def lcm_tool_definitions(
        self, *, format: str = "openai", exclude: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """Definitions of ``lcm_grep``/``lcm_describe``/``lcm_expand``/``lcm_expand_query``
        in the ``"openai"`` (litellm) or ``"anthropic"`` format."""
        names = [n for n in sorted(LCM_TOOL_NAMES) if n not in exclude]
        if format == "openai":
            return openai_tools(names)
        if format == "anthropic":
            return anthropic_tools(names)
        raise InvalidArgumentError(f"format must be 'openai' or 'anthropic', got {format!r}")

    async def execute_tool(self, name: str, arguments: dict[str, Any] | str | None) -> str:
        """Run an ``lcm_*`` tool call against this session; returns JSON for the model.

        Errors are reported inside the JSON (``{"error": ...}``), never raised.
        """
        self._check_open()
        self.tool_calls_run += 1

        async def _expand_query(kw: dict[str, Any]) -> dict[str, Any]:
            result = await self.expand_query(**kw)
            return result.model_dump()

        return await execute_lcm_tool(
            self._tool_engine,
            name,
            arguments,
            expand_query=_expand_query if self._tool_engine is self._retrieval else None,
            max_token_cap=self._tool_token_cap,
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
        """Answer a narrow question about compacted history with a bounded sub-agent.

        See :func:`mnesis.retrieval.subagent.expand_query`.
        """
        self._check_open()
        from mnesis.retrieval.subagent import expand_query

        return await expand_query(
            self,
            prompt,
            query=query,
            summary_ids=summary_ids,
            token_cap=token_cap,
            max_answer_tokens=max_answer_tokens,
            timeout=timeout,
        )

    async def spawn_child(self, *, agent: str, system_prompt: str) -> MnesisSession:
        """A new session whose ``parent_id`` is this one, on the same store and model."""
        self._check_open()
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

    def use_tool_engine(self, engine: RetrievalEngine, *, max_token_cap: int | None = None) -> None:
        """Run this session's ``lcm_*`` tool calls against ``engine`` (a restricted grant)."""
        self._tool_engine = engine
        self._tool_token_cap = max_token_cap

    async def context_for_next_turn(self, system_prompt: str | None = None) -> list[dict[str, Any]]:
        """The ``{"role", "content"}`` messages the next model call would receive."""
        built = await self.build_context(system_prompt)
        return built.to_dicts()

    async def build_context(self, system_prompt: str | None = None) -> BuiltContext:
        """The assembled context of the next turn, with its token breakdown."""
        self._check_open()
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a string")
        prompt = self._record.system_prompt if system_prompt is None else system_prompt
        return await self._builder.build(self.id, self._model_info, prompt, self._config)

    async def compact(self) -> CompactionResult:
        """Compact now (waits for a running compaction first). Never raises for model
        failures: the result says what happened."""
        self._check_open()
        await self._engine.wait_for_pending()
        result = await self._engine.run_compaction(self.id, force=True)
        await self._refresh_context_tokens()
        return result

    async def messages(self) -> list[MessageWithParts]:
        """Every stored message of the session, summaries included, in order."""
        return await self._store.get_messages(self.id, include_summaries=True)

    async def conversation_messages(self) -> list[MessageWithParts]:
        """The stored conversation without summary messages, in order."""
        return await self._store.get_messages(self.id, include_summaries=False)

    def history(self) -> list[TurnSnapshot]:
        """Snapshots of the turns made through this session object."""
        return list(self._turns)

    async def close(self, *, abort_compaction: bool = False) -> None:
        """Finish (or abort) background compaction, then release the store. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if abort_compaction:
                await self._engine.cancel_pending()
            else:
                await self._engine.wait_for_pending()
            self._bus.publish(MnesisEvent.SESSION_CLOSED, {"session_id": self.id})
            await self._bus.drain()
        finally:
            await self._store.close()

    async def __aenter__(self) -> MnesisSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- internals ----------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(f"session {self.id} is closed; load it again to continue")

    def _turn_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def _new_message(self, role: Role, *, parent_id: str | None = None) -> Message:
        return Message(
            id=new_id("msg"),
            session_id=self.id,
            role=role,
            created_at=_now_ms(),
            agent=self._record.agent,
            model_id=self._model_info.model_id if role == "assistant" else None,
            provider_id=self._model_info.provider_id if role == "assistant" else None,
            parent_id=parent_id,
        )

    def _estimate(self, message: Message, parts: list[MessagePart]) -> list[int]:
        tokens = [self._estimator.estimate_part(p) for p in parts]
        message.token_estimate = MESSAGE_OVERHEAD_TOKENS + sum(tokens)
        return tokens

    async def _append(self, role: Role, parts: list[MessagePart]) -> Message:
        message = self._new_message(role)
        tokens = self._estimate(message, parts)
        await self._store.append_message(message, parts, part_tokens=tokens)
        self._context_tokens += message.token_estimate
        return message

    def _publish_message(self, message: Message) -> None:
        self._bus.publish(
            MnesisEvent.MESSAGE_CREATED,
            {"session_id": self.id, "message_id": message.id, "role": message.role},
        )

    async def _fail_turn(self, assistant: Message, texts: list[str], error: str) -> None:
        parts: list[MessagePart] = []
        if texts:
            parts.append(TextPart(text="".join(texts)))
        parts.append(RetryPart(error=error[:2000]))
        tokens = [self._estimator.estimate_part(p) for p in parts]
        estimate = MESSAGE_OVERHEAD_TOKENS + sum(tokens)
        await self._store.append_parts(
            assistant.id,
            parts,
            part_tokens=tokens,
            finish_reason=FinishReason.ERROR,
            token_estimate=estimate,
        )
        self._context_tokens += estimate
        texts.clear()

    async def _finish_assistant(
        self,
        assistant: Message,
        text: str,
        tool_parts: list[ToolPart],
        finish: str,
        usage: TokenUsage,
        built: BuiltContext,
        compaction: CompactionResult | None,
        user_id: str,
    ) -> TurnResult:
        parts: list[MessagePart] = []
        if text:
            parts.append(TextPart(text=text))
        parts.extend(tool_parts)
        tokens = [self._estimator.estimate_part(p) for p in parts]
        estimate = MESSAGE_OVERHEAD_TOKENS + sum(tokens)
        if not usage.effective_total():
            usage = TokenUsage(
                input=built.token_estimate,
                output=estimate,
                total=built.token_estimate + estimate,
            )
        # Parts and the message's token fields in one transaction: a crash leaves either
        # the stub or the finished turn, never parts with a stale estimate.
        await self._store.append_parts(
            assistant.id,
            parts,
            part_tokens=tokens,
            tokens=usage,
            finish_reason=finish,
            token_estimate=estimate,
        )
        self._context_tokens += estimate
        self._token_usage = self._token_usage + usage
        doom = self._check_doom_loop(tool_parts)
        self._publish_message(assistant)
        triggered = await self._after_turn()
        self._turns.append(
            TurnSnapshot(
                turn_index=len(self._turns),
                user_message_id=user_id,
                assistant_message_id=assistant.id,
                context=ContextBreakdown(
                    system_prompt=built.system_prompt_tokens,
                    summaries=built.summary_token_count,
                    messages=built.raw_message_tokens,
                    tool_outputs=built.tool_output_tokens,
                    total=built.token_estimate,
                    budget=built.budget.usable,
                ),
                tokens=usage,
                compaction_triggered=triggered or compaction is not None,
                created_at=_now_ms(),
            )
        )
        try:
            reason: FinishReason | str = FinishReason(finish)
        except ValueError:
            reason = finish
        return TurnResult(
            message_id=assistant.id,
            user_message_id=user_id,
            text=text,
            finish_reason=reason,
            tokens=usage,
            cost=0.0,
            compaction_triggered=triggered or compaction is not None,
            compaction_result=compaction,
            doom_loop_detected=doom,
            tool_calls=tool_parts,
        )

    def _check_doom_loop(self, tool_parts: list[ToolPart]) -> bool:
        detected = False
        threshold = self._config.session.doom_loop_threshold
        for part in tool_parts:
            signature = (
                part.tool_name + "\x00" + json.dumps(part.input, sort_keys=True, default=str)
            )
            self._tool_signatures.append(signature)
            if len(self._tool_signatures) >= threshold and len(set(self._tool_signatures)) == 1:
                detected = True
                self._bus.publish(
                    MnesisEvent.DOOM_LOOP_DETECTED,
                    {
                        "session_id": self.id,
                        "tool_name": part.tool_name,
                        "input": part.input,
                        "count": len(self._tool_signatures),
                    },
                )
        return detected

    def _on_compaction_commit(self) -> None:
        self._context_stale = True
        self._builder.invalidate()

    async def _refresh_context_tokens(self) -> None:
        self._context_stale = False
        self._context_tokens = await self._store.context_token_total(self.id)

    async def _ensure_under_hard_limit(self) -> CompactionResult | None:
        if self._context_stale:
            await self._refresh_context_tokens()
        if not self._config.compaction.auto:
            return None
        if not self._engine.is_hard_overflow(self._view_tokens, self._model_info):
            return None
        if self._engine.in_progress:
            await self._engine.wait_for_pending()
            await self._refresh_context_tokens()
            if not self._engine.is_hard_overflow(self._view_tokens, self._model_info):
                return self._engine.last_result
        result = await self._engine.run_compaction(self.id)
        await self._refresh_context_tokens()
        return result

    async def _after_turn(self) -> bool:
        if self._context_stale and not self._engine.in_progress:
            await self._refresh_context_tokens()
        if not self._config.compaction.auto:
            return False
        return self._engine.check_and_trigger(self.id, self._view_tokens, self._model_info)

    @property
    def _view_tokens(self) -> int:
        """What thresholds compare: the context view plus the default system prompt."""
        return self._context_tokens + self._system_tokens
