"""Per-session compaction locks on PostgreSQL: advisory locks instead of lease rows.

A compaction run spans model calls, so its lock lives on a connection of its own
(outside the pool) as a session-level ``pg_try_advisory_lock``: a second compactor of the
same session, in any process on any host, gets :class:`~mnesis.errors.CompactionLockedError`
at once instead of waiting. Closing the connection releases the lock, and so does the
server when the holder dies (SIGKILL, lost host, server restart): nothing to expire.

Each compaction commit is still one transaction that takes the session's row lock and
re-checks the context items it replaces (``summaries.commit_compaction``), so even a run
whose lock connection was cut mid-run cannot commit over another compactor's work.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator

from mnesis.errors import CompactionLockedError
from mnesis.store.postgres.db import PostgresDatabase

__all__ = ["advisory_compaction_lock", "compaction_lock_key"]


def compaction_lock_key(session_id: str) -> int:
    """The advisory lock key (a signed 64-bit int) of a session's compaction."""
    digest = hashlib.blake2b(b"mnesis.compaction\0" + session_id.encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


@contextlib.asynccontextmanager
async def advisory_compaction_lock(db: PostgresDatabase, session_id: str) -> AsyncIterator[None]:
    """Hold the session's compaction advisory lock for the block (see the module docstring)."""
    key = compaction_lock_key(session_id)
    conn = await db.connect()
    held = False
    try:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
        row = await cur.fetchone()
        if row is None or not row[0]:
            raise CompactionLockedError(
                f"another compactor holds session {session_id}'s advisory lock; retry later"
            )
        held = True
        yield
    finally:
        try:
            if held:
                # The server drops a closed connection's locks only when its backend
                # exits, a moment after the close: unlock first, so the next run of this
                # process never finds its own lock still held.
                with contextlib.suppress(Exception):
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            with contextlib.suppress(Exception):
                await conn.close()
