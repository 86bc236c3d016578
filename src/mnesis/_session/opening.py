"""Creating and reopening the stored side of a session: its row, its store, its config."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from mnesis._session.validation import check_session_id, resolve_config
from mnesis.config import MnesisConfig
from mnesis.errors import MnesisError, StoreReadOnlyError
from mnesis.models.clock import now_ms
from mnesis.models.ids import new_id
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import SessionRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.store.pool import StorePool

__all__ = ["StoredSession", "create_stored", "load_stored"]

logger = logging.getLogger("mnesis.session")


@dataclass
class StoredSession:
    """A session row and everything needed to run it, before the session object exists."""

    record: SessionRecord
    store: ImmutableStore
    config: MnesisConfig
    pool: StorePool
    db_path: str
    context_tokens: int = 0
    token_usage: TokenUsage = field(default_factory=TokenUsage)


async def create_stored(
    *,
    model: str,
    agent: str,
    parent_id: str | None,
    config: MnesisConfig,
    system_prompt: str,
    db_path: str | None,
    pool: StorePool | None,
) -> StoredSession:
    """Insert a new session row; ``config`` is already resolved."""
    pool = pool or StorePool.default()
    store = await pool.acquire(db_path, config=config.store)
    now = now_ms()
    record = SessionRecord(
        id=new_id("sess"),
        model=model,
        agent=agent,
        parent_id=parent_id,
        system_prompt=system_prompt,
        created_at=now,
        updated_at=now,
        config=config.stored_form(),
    )
    try:
        await store.create_session(record)
    except BaseException:
        await store.close()
        raise
    return StoredSession(record, store, config, pool, db_path or config.store.db_path)


async def load_stored(
    session_id: str,
    config: MnesisConfig | None,
    db_path: str | None,
    pool: StorePool | None,
) -> StoredSession:
    """Read a stored session back; raises :class:`~mnesis.errors.SessionNotFoundError`.

    Without ``config`` the session runs with its stored configuration (its window,
    thresholds and targets); the store section stays the caller's. With a ``config``
    that differs from the stored one, the stored one becomes it (:func:`_adopt_config`),
    so workers compacting the session decide with the same numbers as its agent.
    """
    check_session_id(session_id)
    cfg = resolve_config(config, db_path)
    pool = pool or StorePool.default()
    store = await pool.acquire(db_path, config=cfg.store)
    try:
        record = await store.get_session(session_id)
        context_tokens = await store.context_token_total(session_id)
        usage = await store.session_token_usage(session_id)
    except BaseException:
        await store.close()
        raise
    if config is None and record.config:
        try:
            cfg = MnesisConfig(**{**record.config, "store": cfg.store})
        except MnesisError:
            logger.warning("stored config of %s is invalid; using defaults", session_id)
    elif config is not None:
        record = await _adopt_config(store, record, cfg)
    return StoredSession(
        record, store, cfg, pool, db_path or cfg.store.db_path, context_tokens, usage
    )


async def _adopt_config(
    store: ImmutableStore, record: SessionRecord, config: MnesisConfig
) -> SessionRecord:
    """Store ``config`` as the session's configuration if it differs (the last agent to
    load a session with a config sets it; a read-only store keeps the old one)."""
    wanted = config.stored_form()
    if record.config == wanted:
        return record
    old = record.config or {}
    changed: list[str] = []
    for section, value in wanted.items():
        before = old.get(section)
        if isinstance(value, dict) and isinstance(before, dict):
            changed += [f"{section}.{k}" for k in value if before.get(k) != value[k]]
        elif before != value:
            changed.append(section)
    try:
        await store.set_session_config(record.id, wanted)
    except StoreReadOnlyError:
        logger.warning("session %s loaded with another config on a read-only store", record.id)
        return record
    logger.info(
        "session %s: stored config updated by the loading agent (%s)",
        record.id,
        ", ".join(changed) or "removed keys",
    )
    return replace(record, config=wanted)
