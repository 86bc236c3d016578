"""``ImmutableStore``: the store every part of mnesis talks to, whatever the backend.

It checks every argument once (types, identifiers, ranges, choices; see
:mod:`mnesis.store.checks`), before any backend code runs, then delegates to a
:class:`~mnesis.store.base.StoreBackend` (SQLite or PostgreSQL). Backends therefore
only ever see well-formed arguments, and bad input gets the same
:class:`~mnesis.errors.InvalidArgumentError` on every backend.

Construction, as the seeds write it::

    store = ImmutableStore(config.store, pool=pool)
    await store.initialize()          # the config's URL or path picks the backend

or in one step: ``store = await ImmutableStore.open("sessions.db")``. With a pool, the
store shares the pool's database handle (per path or URL); without one it opens its
own and :meth:`close` closes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack

from mnesis.config import StoreConfig
from mnesis.errors import (
    AppendOnlyViolationError,
    DuplicateIDError,
    MessageNotFoundError,
    MnesisStoreError,
    PartNotFoundError,
    SessionNotFoundError,
    StoreBusyError,
    StoreCorruptError,
    StoreFullError,
    StoreReadOnlyError,
    SummaryNotFoundError,
)
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import MessagePart
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import (
    AppendedMessage,
    ContextItem,
    ContextPlaces,
    FileReference,
    NewMessage,
    RecentTurn,
    SearchHit,
    SessionRecord,
    StoreBackend,
)
from mnesis.store.checks import (
    check_choice,
    check_count,
    check_id,
    check_ids,
    check_instance,
    check_new_message,
    check_new_messages,
    check_optional_id,
    check_sequence,
)
from mnesis.store.factory import StoreLocation, open_backend, resolve_location
from mnesis.store.legacy import (
    ImmutableFieldError,
    LegacyStoreAPI,
    MessageEstimate,
    MessagesSince,
    PartStatusUpdate,
    RawMessagePart,
    Session,
    messages_after,
)
from mnesis.store.legacy_forms import (
    filtered_sessions,
    message_change,
    messages_query,
    part_status_change,
    session_record_of,
)
from mnesis.store.map_runs import MapRunStore
from mnesis.store.record_checks import (
    check_context_query,
    check_file_reference,
    check_message_change,
    check_messages_query,
    check_part_status,
    check_parts_append,
    check_session_record,
    check_text_scan,
    check_text_search,
    check_tombstones,
)
from mnesis.store.records import ContextItemsQuery, PartsAppend, TextScan, TextSearch
from mnesis.store.session_stats import SessionStats
from mnesis.store.vectors import VectorStore

if TYPE_CHECKING:
    from mnesis.store.pool import StorePool

__all__ = ["ImmutableStore", "RawMessagePart"]
__all__ += ["DuplicateIDError", "ImmutableFieldError", "Session"]  # 0.4.0's (issue 31)
__all__ += [  # the store's errors, importable from here as the seeds do
    "AppendOnlyViolationError",
    "MessageNotFoundError",
    "MnesisStoreError",
    "PartNotFoundError",
    "SessionNotFoundError",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreFullError",
    "StoreReadOnlyError",
    "SummaryNotFoundError",
]


class ImmutableStore(LegacyStoreAPI):
    """The validating store facade over one backend (see the module docstring)."""

    def __init__(
        self,
        config: StoreConfig | str | None = None,
        pool: StorePool | None = None,
        *,
        db_path: str | None = None,
    ) -> None:
        """Where to store: a :class:`StoreConfig`, or a path / URL string; ``db_path``
        overrides the config's location. Nothing is opened until :meth:`initialize`.

        Raises :class:`~mnesis.errors.MnesisConfigError` for a location no backend takes.
        """
        if isinstance(config, str):
            db_path, config = config if db_path is None else db_path, None
        elif config is not None:
            check_instance(config, "config", StoreConfig)
        self._config = config or StoreConfig()
        self._location: StoreLocation = resolve_location(self._config, db_path)
        self._pool = pool
        self._backend: StoreBackend | None = None

    @classmethod
    async def open(
        cls, config: StoreConfig | str | None = None, *, pool: StorePool | None = None
    ) -> ImmutableStore:
        """Construct and :meth:`initialize` in one call."""
        store = cls(config, pool=pool)
        await store.initialize()
        return store

    @classmethod
    def over(cls, backend: StoreBackend) -> ImmutableStore:
        """A facade over an already opened backend (closing it closes the backend)."""
        check_instance(backend, "backend", StoreBackend)
        store = cls(backend.location)
        store._backend = backend
        return store

    async def initialize(self) -> None:
        """Open (creating and migrating if needed) the backend the location names.

        Idempotent. Raises a :class:`~mnesis.errors.MnesisStoreError` subclass if the
        database cannot be opened, :class:`~mnesis.errors.MissingDependencyError` for a
        PostgreSQL URL without the ``postgres`` extra."""
        if self._backend is not None:
            return
        if self._pool is not None:
            self._backend = await self._pool.acquire_backend(self._location, self._config)
            return
        self._backend = await open_backend(self._location, self._config)

    @property
    def backend(self) -> StoreBackend:
        """The backend this facade delegates to (raises if not initialized)."""
        if self._backend is None:
            raise MnesisStoreError(
                f"the store on {self._location.describe()} is not initialized; "
                "await store.initialize() first"
            )
        return self._backend

    @property
    def pool(self) -> StorePool | None:
        """The pool this store shares its database through (None: it owns the database)."""
        return self._pool

    @property
    def location(self) -> str:
        return self._backend.location if self._backend else self._location.describe()

    @property
    def map_runs(self) -> MapRunStore:
        return self.backend.map_runs

    @property
    def vectors(self) -> VectorStore | None:
        """Stored embedding vectors (``mnesis.retrieval.semantic``); None if not kept."""
        return self.backend.vectors

    async def close(self) -> None:
        if self._backend is not None:
            await self._backend.close()

    # sessions -------------------------------------------------------------
    async def create_session(  # type: ignore[override]
        self,
        id: SessionRecord | str,
        *,
        model_id: str = "",
        provider_id: str = "",
        agent: str = "default",
        parent_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        system_prompt: str = "",
    ) -> Session:
        """Store a new session: a :class:`SessionRecord`, or (0.4.0's form) its ID and
        fields, ``model`` being ``provider_id/model_id``. ``metadata`` is accepted for
        0.4.0's code and not stored. Returns the session in 0.4.0's shape."""
        record = session_record_of(
            id,
            metadata,
            model_id=model_id,
            provider_id=provider_id,
            agent=agent,
            parent_id=parent_id,
            title=title,
            system_prompt=system_prompt,
        )
        check_session_record(record)
        await self.backend.create_session(record)
        return Session.from_record(record)

    async def get_session(self, session_id: str) -> SessionRecord:
        check_id(session_id, "session_id")
        return await self.backend.get_session(session_id)

    async def list_sessions(
        self,
        *,
        parent_id: str | None = None,
        active_only: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> list[SessionRecord]:
        """Sessions, newest first; only the children of ``parent_id`` and only active
        (not closed) ones when asked (0.4.0's filters)."""
        check_count(limit, "limit")
        check_count(offset, "offset")
        check_optional_id(parent_id, "parent_id")
        if parent_id is None and not active_only:
            return await self.backend.list_sessions(limit=limit, offset=offset)
        return await filtered_sessions(self.backend, parent_id, active_only, limit, offset)

    async def set_session_status(
        self, session_id: str, status: Literal["active", "closed"]
    ) -> None:
        check_id(session_id, "session_id")
        check_choice(status, "status", ("active", "closed"))
        await self.backend.set_session_status(session_id, status)

    async def set_session_config(self, session_id: str, config: dict[str, Any]) -> None:
        """Replace the session's stored configuration (JSON-able; without its ``store``
        section): what workers compact it with, and what ``load`` without a config uses."""
        check_id(session_id, "session_id")
        check_instance(config, "config", dict)
        await self.backend.set_session_config(session_id, config)

    # messages -------------------------------------------------------------
    async def append_messages(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        for index, item in enumerate(check_sequence(batch, "batch")):
            check_new_message(item, f"batch[{index}]")
        return await self.backend.append_messages(batch)

    async def append_batch(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        return await self.backend.append_batch(check_new_messages(batch))

    async def _append_one(self, item: NewMessage) -> AppendedMessage:
        check_new_message(item, "message")
        (result,) = await self.backend.append_messages([item])
        return result

    async def append_parts(
        self, message_id: str, parts: Sequence[MessagePart], **options: Unpack[PartsAppend]
    ) -> list[str]:
        check_parts_append(message_id, parts, options)
        return await self.backend.append_parts(message_id, parts, **options)

    async def update_message_tokens(
        self,
        message_id: str,
        tokens: TokenUsage | None = None,
        cost: float | None = None,
        finish_reason: str | None = None,
        **estimate: Unpack[MessageEstimate],
    ) -> None:
        change = message_change(tokens, cost, finish_reason, estimate)
        check_message_change(message_id, change)
        await self.backend.update_message_tokens(message_id, **change)

    async def update_part_status(self, part_id: str, **change: Unpack[PartStatusUpdate]) -> None:
        status = part_status_change(change)
        check_part_status(part_id, status)
        await self.backend.update_part_status(part_id, **status)

    async def tombstone_parts(
        self,
        parts: Sequence[tuple[str, int, int]],
        message_estimates: Sequence[tuple[str, int]],
    ) -> None:
        check_tombstones(parts, message_estimates)
        await self.backend.tombstone_parts(parts, message_estimates)

    async def get_message(self, message_id: str) -> MessageWithParts:
        check_id(message_id, "message_id")
        return await self.backend.get_message(message_id)

    async def get_messages(
        self, session_id: str, **query: Unpack[MessagesSince]
    ) -> list[MessageWithParts]:
        """The session's messages, oldest first (see :class:`MessagesQuery`); with
        ``since_message_id`` (0.4.0's filter) only those after that message."""
        backend_query, since = messages_query(query)
        check_messages_query(session_id, backend_query)
        check_optional_id(since, "since_message_id")
        if "include_summaries" in backend_query:
            backend_query["include_summaries"] = bool(backend_query["include_summaries"])
        return messages_after(await self.backend.get_messages(session_id, **backend_query), since)

    async def get_messages_by_ids(self, message_ids: Sequence[str]) -> list[MessageWithParts]:
        check_ids(message_ids, "message_ids")
        return await self.backend.get_messages_by_ids(message_ids)

    async def count_messages(self, session_id: str) -> int:
        check_id(session_id, "session_id")
        return await self.backend.count_messages(session_id)

    async def session_token_usage(self, session_id: str) -> TokenUsage:
        check_id(session_id, "session_id")
        return await self.backend.session_token_usage(session_id)

    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        if session_ids is not None:
            check_ids(session_ids, "session_ids")
        return await self.backend.session_stats(session_ids)

    async def find_tool_part(self, session_id: str, tool_call_id: str) -> tuple[str, str]:
        check_id(session_id, "session_id")
        check_id(tool_call_id, "tool_call_id")
        return await self.backend.find_tool_part(session_id, tool_call_id)

    # context --------------------------------------------------------------
    async def get_context_items(
        self, session_id: str, **query: Unpack[ContextItemsQuery]
    ) -> list[ContextItem]:
        check_context_query(session_id, query)
        if "newest_first" in query:
            query["newest_first"] = bool(query["newest_first"])
        return await self.backend.get_context_items(session_id, **query)

    async def context_token_total(self, session_id: str) -> int:
        check_id(session_id, "session_id")
        return await self.backend.context_token_total(session_id)

    # search ---------------------------------------------------------------
    async def search_text(self, **search: Unpack[TextSearch]) -> list[SearchHit]:
        check_text_search(search)
        return await self.backend.search_text(**search)

    async def scan_text(self, **scan: Unpack[TextScan]) -> list[SearchHit]:
        check_text_scan(scan)
        return await self.backend.scan_text(**scan)

    async def replies_to(self, message_ids: Sequence[str]) -> dict[str, SearchHit]:
        check_ids(message_ids, "message_ids")
        return await self.backend.replies_to(message_ids)

    # files ----------------------------------------------------------------
    async def store_file_reference(self, ref: FileReference) -> FileReference:
        check_file_reference(ref)
        return await self.backend.store_file_reference(ref)

    async def get_file_reference(self, content_id: str) -> FileReference | None:
        """The reference with this content ID (or file ID), or ``None``."""
        check_id(content_id, "content_id")
        return await self.backend.get_file_reference(content_id)

    # retrieval's reads around a search ---------------------------------------
    async def context_places(
        self, message_ids: Sequence[str], summary_ids: Sequence[str]
    ) -> ContextPlaces:
        check_ids(message_ids, "message_ids")
        check_ids(summary_ids, "summary_ids")
        return await self.backend.context_places(message_ids, summary_ids)

    async def recent_turns(self, session_ids: Sequence[str], count: int) -> list[RecentTurn]:
        check_ids(session_ids, "session_ids")
        check_count(count, "count")
        return await self.backend.recent_turns(session_ids, count)
