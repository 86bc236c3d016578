"""The per-session compaction lease: one compactor per session across engines and processes."""

from __future__ import annotations

import contextlib
import logging
import os
import socket

from mnesis.models.ids import new_id
from mnesis.store.immutable import ImmutableStore

__all__ = ["CompactionLease", "owner_is_dead"]

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


class CompactionLease:
    """Takes and gives back the lease row of a session, under one owner name per instance.

    A lease held by a dead process of this host is taken over; one held by a
    live owner is respected until its time-to-live runs out.
    """

    def __init__(self, store: ImmutableStore) -> None:
        self.store = store
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id('run')}"

    async def acquire(self, session_id: str, ttl_seconds: float) -> bool:
        """True if this owner now holds the session's lease."""
        store = self.store
        if await store.acquire_compaction_lock(session_id, self.owner, ttl_seconds):
            return True
        holder = await store.compaction_lock_owner(session_id)
        if holder is None or not owner_is_dead(holder):
            return False
        logger.warning("taking over the compaction lease of dead %s", holder)
        return await store.acquire_compaction_lock(
            session_id, self.owner, ttl_seconds, steal_from=holder
        )

    async def release(self, session_id: str) -> None:
        """Give the lease back; failures are ignored (the lease expires on its own)."""
        with contextlib.suppress(Exception):
            await self.store.release_compaction_lock(session_id, self.owner)
