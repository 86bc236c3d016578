"""The compaction lease of a session as a lock: the default ``compaction_lock`` of a backend.

A lease is a row (session, owner, expiry) in ``compaction_locks``. Taking it fails at
once when a live owner holds it; a lease held by a dead process of this host is taken
over, and any lease expires after its time-to-live (a crashed host cannot wedge a
session). SQLite uses it; PostgreSQL uses an advisory lock instead
(:mod:`mnesis.store.postgres.locks`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from mnesis.errors import CompactionLockedError

if TYPE_CHECKING:
    from mnesis.store.base import StoreBackend

__all__ = ["lease_lock", "owner_is_dead"]

logger = logging.getLogger("mnesis.compaction")


def owner_is_dead(owner: str) -> bool:
    """True when a lease owner (``host:pid:run``) is a process of this host that is gone."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


async def _acquire(backend: StoreBackend, session_id: str, owner: str, ttl: float) -> bool:
    if await backend.acquire_compaction_lock(session_id, owner, ttl):
        return True
    holder = await backend.compaction_lock_owner(session_id)
    if holder is None or not owner_is_dead(holder):
        return False
    logger.warning("taking over the compaction lease of dead %s", holder)
    return await backend.acquire_compaction_lock(session_id, owner, ttl, steal_from=holder)


@contextlib.asynccontextmanager
async def lease_lock(
    backend: StoreBackend, session_id: str, owner: str, ttl_seconds: float
) -> AsyncIterator[None]:
    """Hold the session's lease for the block; :class:`CompactionLockedError` at once
    if a live owner holds it. Release failures are ignored (the lease expires)."""
    if not await _acquire(backend, session_id, owner, ttl_seconds):
        raise CompactionLockedError(f"another compactor holds session {session_id}'s lock")
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await backend.release_compaction_lock(session_id, owner)
