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
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from mnesis.compaction.engine import CompactionEngine
from mnesis.config import DEFAULT_DB_PATH, MnesisConfig
from mnesis.context.builder import BuiltContext, ContextBuilder
from mnesis.errors import InvalidArgumentError, MnesisError, SessionClosedError
from mnesis.events.bus import EventBus, EventHandler, MnesisEvent
from mnesis.files import LargeFileHandler
from mnesis.llm import LLMClient, resolve_client
from mnesis.models.ids import is_valid_id, new_id
from mnesis.models.message import CompactionResult, MessageWithParts, TurnSnapshot
from mnesis.models.model_info import ModelInfo
from mnesis.models.tokens import TokenUsage
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.session_input import _check_encodable
from mnesis.session_tools import ToolsMixin
from mnesis.session_turns import PartCallback as PartCallback  # re-exported
from mnesis.session_turns import TurnsMixin, _now_ms
from mnesis.store.base import SessionRecord
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.store.pool import StorePool
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["MnesisSession"]

logger = logging.getLogger("mnesis.session")


class MnesisSession(TurnsMixin, ToolsMixin):
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

    def subscribe(self, event: MnesisEvent | None, handler: EventHandler) -> None:
        """Call ``handler(event, payload)`` for ``event`` (``None``: all events)."""
        self._bus.subscribe(event, handler)

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
