"""The compaction lease of a session as a lock: the default ``compaction_lock`` of a backend.

A lease is a row (session, owner, expiry) in ``compaction_locks``. Taking it fails at
once when a live owner holds it; a lease held by a dead process of this host is taken
over, and any lease expires after its time-to-live (a crashed host cannot wedge a
session). A lease this process wrote but no longer holds (its block ended and the
release failed, e.g. on a full disk, or its session was closed) is taken over at
once too: the process keeps the set of owners whose block is running. SQLite uses
it; PostgreSQL uses an advisory lock instead (:mod:`mnesis.store.postgres.locks`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnesis.errors import CompactionLockedError
from mnesis.models.ids import id_milliseconds, is_valid_id

if TYPE_CHECKING:
    from mnesis.store.base import StoreBackend

__all__ = ["LeaseRow", "lease_lock", "lease_started_at", "owner_is_dead", "owner_is_stale"]

logger = logging.getLogger("mnesis.compaction")


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """A compaction lease as stored: its session, owner and expiry (ms since the epoch)."""

    session_id: str
    owner: str
    expires_at_ms: int


_HELD: set[str] = set()
"""Owners whose ``lease_lock`` block is running in this process."""


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


def _is_this_process(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    return host == socket.gethostname() and rest.partition(":")[0] == str(os.getpid())


def owner_is_stale(owner: str) -> bool:
    """True when nobody can be using the lease of ``owner``: its process is gone, or it
    is this process and no block holds it any more (a release that failed)."""
    if _is_this_process(owner):
        return owner not in _HELD
    return owner_is_dead(owner)


def lease_started_at(owner: str) -> float | None:
    """When the lease of ``owner`` (``host:pid:run_…``) was taken, in seconds since the
    epoch, read from its time-ordered run ID (None if the owner is not one of ours)."""
    run_id = owner.rpartition(":")[2]
    if not is_valid_id(run_id, "run"):
        return None
    return id_milliseconds(run_id) / 1000


async def _acquire(backend: StoreBackend, session_id: str, owner: str, ttl: float) -> bool:
    if await backend.acquire_compaction_lock(session_id, owner, ttl):
        return True
    holder = await backend.compaction_lock_owner(session_id)
    if holder is None or not owner_is_stale(holder):
        return False
    logger.warning("taking over the compaction lease left by %s", holder)
    return await backend.acquire_compaction_lock(session_id, owner, ttl, steal_from=holder)


@contextlib.asynccontextmanager
async def lease_lock(
    backend: StoreBackend, session_id: str, owner: str, ttl_seconds: float
) -> AsyncIterator[None]:
    """Hold the session's lease for the block; :class:`CompactionLockedError` at once
    if a live owner holds it. A release that fails leaves a lease any later caller in
    this process takes over at once (and other processes once it expires)."""
    if not await _acquire(backend, session_id, owner, ttl_seconds):
        raise CompactionLockedError(f"another compactor holds session {session_id}'s lock")
    _HELD.add(owner)
    try:
        yield
    finally:
        _HELD.discard(owner)
        with contextlib.suppress(Exception):
            await backend.release_compaction_lock(session_id, owner)
