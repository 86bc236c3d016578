"""The keywords of :meth:`MnesisSession.open <mnesis.session.MnesisSession.open>`: those of
``create``, or ``session_id`` (with ``config``, ``db_path``, ``pool``, ``llm``,
``event_bus``, ``context_limit``, ``max_output_tokens``) to ``load`` a stored session
instead."""

from __future__ import annotations

from typing import TypedDict

from mnesis.config import MnesisConfig
from mnesis.events.bus import EventBus
from mnesis.llm import ClientLike
from mnesis.store.pool import StorePool

__all__ = ["SessionOpenOptions"]


class SessionOpenOptions(TypedDict, total=False):
    """What ``MnesisSession.open`` passes on to ``create`` (or, with ``session_id``, to
    ``load``); each key means what it means there."""

    session_id: str
    model: str
    agent: str
    parent_id: str | None
    config: MnesisConfig | None
    system_prompt: str
    db_path: str | None
    pool: StorePool | None
    llm: ClientLike | None
    event_bus: EventBus | None
    context_limit: int | None
    max_output_tokens: int | None
