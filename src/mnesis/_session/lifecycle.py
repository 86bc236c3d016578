"""A session's lifecycle below the facade: opening a new or stored session with its model
client, noting whether the session object wrote, and closing."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from mnesis._session.opening import StoredSession, create_stored, load_stored
from mnesis._session.validation import check_new_session, resolve_config
from mnesis._session.wiring import Wiring
from mnesis.config import MnesisConfig
from mnesis.errors import StoreReadOnlyError
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.llm import ClientLike, LLMClient, resolve_client
from mnesis.store.immutable import ImmutableStore
from mnesis.store.pool import StorePool

__all__ = ["Opening", "WriteTracker", "close_session", "open_new", "open_stored"]


@dataclass(frozen=True, slots=True)
class Opening:
    """What :meth:`MnesisSession.create <mnesis.session.MnesisSession.create>` and ``load``
    share: where the session is stored, its model client, and the model's window for this
    run (``None``: the default, or the stored one)."""

    config: MnesisConfig | None
    db_path: str | None
    pool: StorePool | None
    llm: ClientLike | None
    context_limit: int | None = None
    max_output_tokens: int | None = None

    def windowed(self, config: MnesisConfig) -> MnesisConfig:
        """``config`` with the given window (``MnesisConfigError`` for a bad value)."""
        return config.with_window(self.context_limit, self.max_output_tokens)


async def open_new(
    opening: Opening, *, model: str, agent: str, parent_id: str | None, system_prompt: str
) -> tuple[StoredSession, LLMClient]:
    """Check the arguments, resolve the model client and insert the new session row."""
    check_new_session(model, agent, system_prompt, parent_id)
    cfg = opening.windowed(resolve_config(opening.config, opening.db_path))
    client = resolve_client(model, opening.llm)
    stored = await create_stored(
        model=model,
        agent=agent,
        parent_id=parent_id,
        config=cfg,
        system_prompt=system_prompt,
        db_path=opening.db_path,
        pool=opening.pool,
    )
    return stored, client


async def open_stored(session_id: str, opening: Opening) -> tuple[StoredSession, LLMClient]:
    """Read a stored session back and resolve the client of its model; a given window
    replaces the stored one for this run."""
    opening.windowed(MnesisConfig())  # bad values: raise before the store is opened
    stored = await load_stored(session_id, opening.config, opening.db_path, opening.pool)
    stored.config = opening.windowed(stored.config)
    return stored, resolve_client(stored.record.model, opening.llm)


class WriteTracker:
    """Whether a session object created its session or added to it (closing then marks the
    session closed; a load-and-close look at a session leaves its row alone)."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        self.wrote = False

    def on_message_created(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        """The ``MESSAGE_CREATED`` handler: a message of this session means it wrote."""
        if payload.get("session_id") == self._session_id:
            self.wrote = True


async def close_session(
    wiring: Wiring,
    store: ImmutableStore,
    bus: EventBus,
    session_id: str,
    *,
    wrote: bool,
    abort_compaction: bool,
) -> None:
    """Finish (or abort) background compaction, mark the session closed if ``wrote``,
    publish ``SESSION_CLOSED`` and release the store (always)."""
    try:
        if abort_compaction:
            await wiring.engine.cancel_pending()
        else:
            await wiring.engine.wait_for_pending()
        if wrote:
            with contextlib.suppress(StoreReadOnlyError):  # a read-only file: nothing to mark
                await store.set_session_status(session_id, "closed")
        bus.publish(MnesisEvent.SESSION_CLOSED, {"session_id": session_id})
        await bus.drain()
    finally:
        await store.close()
