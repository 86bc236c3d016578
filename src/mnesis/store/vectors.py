"""Embedding vectors stored next to the rows they embed: the interface backends implement.

Two tables (migration ``m007_vectors`` on both backends) hold derived data only:

* ``part_vectors``: one row per embedded text part, keyed by ``part_id``;
* ``summary_vectors``: one row per embedded summary, keyed by ``summary_id``.

Each row carries its session, the ``created_at`` of its message or summary (so scans
filter by time without a join), the model that produced it and the vector as a blob
(its encoding is :mod:`mnesis.retrieval.semantic.codec`'s: int8 values and a scale,
or float32 for rows written before). A row is replaced when a different model
re-embeds it.
Rows go with their part or summary (``ON DELETE CASCADE``), so a purge removes them.
Nothing here knows how vectors are made: see :mod:`mnesis.retrieval.semantic`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["PendingText", "StoredVector", "VectorStore"]

VectorKind = Literal["message", "summary"]
MIN_TIME = -(2**63)
MAX_TIME = 2**63 - 1
MAX_KEY = 2**63 - 1
"""The bounds a scan or a pending read takes when the caller gives none."""
Times = tuple[int, int]
"""``created_at`` from (inclusive) and until (exclusive)."""


@dataclass(frozen=True, slots=True)
class PendingText:
    """A text with no vector yet for the asked model."""

    kind: VectorKind
    id: str
    """Message ID or summary ID."""
    session_id: str
    created_at: int
    text: str
    part_id: str | None = None
    context: str | None = None
    """A part's ``search_context``: speaker and date, then the previous turns
    (``role: text``, newest first), one per line."""
    key: int = 0
    """The row key of the part or summary (see :meth:`VectorStore.pending`)."""


@dataclass(frozen=True, slots=True)
class StoredVector:
    """One stored vector (``key`` orders a scan and resumes it)."""

    kind: VectorKind
    key: int
    id: str
    """Message ID or summary ID."""
    session_id: str
    created_at: int
    vector: bytes
    part_id: str | None = None


class VectorStore(ABC):
    """Reads and writes ``part_vectors`` / ``summary_vectors`` (``store.vectors``)."""

    async def pending(
        self,
        session_id: str,
        model: str,
        kind: VectorKind,
        limit: int,
        *,
        after_key: int = 0,
        up_to_key: int | None = None,
    ) -> list[PendingText]:
        """Up to ``limit`` texts of the session with no vector from ``model`` and a row
        key above ``after_key`` (and at most ``up_to_key``), in key order.

        Messages give their text parts (not tool output, not summary messages);
        summaries give their content. Row keys (a part's or summary's ``rowid`` on
        SQLite, ``key`` on PostgreSQL) grow in commit order within a session (every
        write locks its session), so a reader that has handled every text up to a key
        only needs the rows above it: see :meth:`last_key`."""
        top = MAX_KEY if up_to_key is None else up_to_key
        return await self._pending(session_id, model, kind, limit, after_key, top)

    @abstractmethod
    async def _pending(
        self, session_id: str, model: str, kind: VectorKind, limit: int, after_key: int, top: int
    ) -> list[PendingText]:
        """:meth:`pending` up to the row key ``top``."""

    @abstractmethod
    async def last_key(self, session_id: str, kind: VectorKind) -> int:
        """The highest row key of the session's parts (or summaries); 0 when none.

        Read before :meth:`pending`: when ``pending`` then returns fewer than its
        ``limit``, every text up to this key has been returned or has a vector."""

    @abstractmethod
    async def put(self, model: str, rows: Sequence[tuple[PendingText, bytes]]) -> None:
        """Store (or replace) the vector of each text, in one transaction that locks
        the texts' sessions first, so a session's vector keys grow in commit order."""

    @abstractmethod
    async def last_vector_key(self, session_id: str, model: str, kind: VectorKind) -> int:
        """The highest key of the session's vectors from ``model``; 0 when none.

        Everything a :meth:`scan` read up to a key stays true until this key is lower
        than it (the session was purged): rows only ever appear above it."""

    @abstractmethod
    async def count(self, session_id: str, model: str, kind: VectorKind) -> int:
        """How many vectors from ``model`` the session holds."""

    async def scan(
        self,
        session_id: str,
        model: str,
        kind: VectorKind,
        *,
        after_key: int,
        limit: int,
        since: int | None = None,
        until: int | None = None,
    ) -> list[StoredVector]:
        """Up to ``limit`` vectors of the session from ``model`` with a key above
        ``after_key``, in key order, created at or after ``since`` and before ``until``."""
        low = MIN_TIME if since is None else since
        high = MAX_TIME if until is None else until
        return await self._scan(session_id, model, kind, after_key, limit, (low, high))

    @abstractmethod
    async def _scan(
        self, session_id: str, model: str, kind: VectorKind, after: int, limit: int, times: Times
    ) -> list[StoredVector]:
        """:meth:`scan` (``after``: its ``after_key``) with ``created_at`` in ``times``."""
