"""The per-session compaction lock: one compactor per session across engines and processes.

The lock itself is a capability of the store (``StoreBackend.compaction_lock``): a lease
row on SQLite, an advisory lock on PostgreSQL. The engine holds it through
:class:`CompactionLease` and never branches on the backend.
"""

from __future__ import annotations

import os
import socket
from contextlib import AbstractAsyncContextManager

from mnesis.models.ids import new_id
from mnesis.store.immutable import ImmutableStore
from mnesis.store.lease import owner_is_dead

__all__ = ["CompactionLease", "owner_is_dead"]


class CompactionLease:
    """Holds the compaction lock of a session, under one owner name per instance."""

    def __init__(self, store: ImmutableStore) -> None:
        self.store = store
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id('run')}"

    def hold(self, session_id: str, ttl_seconds: float) -> AbstractAsyncContextManager[None]:
        """``async with lease.hold(...)``: raises
        :class:`~mnesis.errors.CompactionLockedError` at once if another compactor holds
        the session (``ttl_seconds`` bounds a lease a crashed host leaves behind)."""
        return self.store.compaction_lock(session_id, self.owner, ttl_seconds)
