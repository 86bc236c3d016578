"""``part_vectors`` / ``summary_vectors`` for both backends: the statements (``?``
placeholders) and :class:`SQLVectorStore`, which runs them on either database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.codec import dumps
from mnesis.store.shared.hit_contexts import SQLITE_PART_NEIGHBOURS, contexts_of, keys_of
from mnesis.store.shared.statements import Statements
from mnesis.store.vectors import PendingText, StoredVector, VectorKind, VectorStore

__all__ = [
    "COUNT",
    "MAX_TIME",
    "MIN_TIME",
    "PENDING",
    "PUT",
    "SCAN",
    "SQLVectorStore",
    "pending_text",
    "put_row",
    "scan_args",
    "stored_vector",
]

MIN_TIME = -(2**63)
MAX_TIME = 2**63 - 1

PENDING: dict[VectorKind, str] = {
    "message": (
        "SELECT p.message_id, p.session_id, m.created_at, p.text_content, p.id, "
        "CAST(m.role AS TEXT) "
        "FROM message_parts p JOIN messages m ON m.id = p.message_id "
        "LEFT JOIN part_vectors v ON v.part_id = p.id AND v.model = ? "
        "WHERE p.session_id = ? AND p.part_type = 'text' AND p.text_content IS NOT NULL "
        "AND NOT m.is_summary AND v.part_id IS NULL ORDER BY m.seq, p.ordinal LIMIT ?"
    ),
    "summary": (
        "SELECT s.id, s.session_id, s.created_at, s.content, NULL, NULL "
        "FROM summaries s LEFT JOIN summary_vectors v ON v.summary_id = s.id AND v.model = ? "
        "WHERE s.session_id = ? AND v.summary_id IS NULL ORDER BY s.created_at, s.id LIMIT ?"
    ),
}
"""Texts of one session without a vector from a model: ``(model, session_id, limit)``;
a part's row ends with its message's role (its context is rebuilt, see
:meth:`SQLVectorStore.pending`)."""

PUT: dict[VectorKind, str] = {
    "message": (
        "INSERT INTO part_vectors (part_id, message_id, session_id, created_at, model, vector) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (part_id) DO UPDATE SET "
        "model = excluded.model, vector = excluded.vector"
    ),
    "summary": (
        "INSERT INTO summary_vectors (summary_id, session_id, created_at, model, vector) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (summary_id) DO UPDATE SET "
        "model = excluded.model, vector = excluded.vector"
    ),
}

COUNT: dict[VectorKind, str] = {
    "message": "SELECT count(*) FROM part_vectors WHERE session_id = ? AND model = ?",
    "summary": "SELECT count(*) FROM summary_vectors WHERE session_id = ? AND model = ?",
}

SCAN: dict[VectorKind, str] = {
    "message": (
        "SELECT id, message_id, session_id, created_at, vector, part_id FROM part_vectors "
        "WHERE session_id = ? AND model = ? AND id > ? AND created_at >= ? "
        "AND created_at < ? ORDER BY id LIMIT ?"
    ),
    "summary": (
        "SELECT id, summary_id, session_id, created_at, vector, NULL FROM summary_vectors "
        "WHERE session_id = ? AND model = ? AND id > ? AND created_at >= ? "
        "AND created_at < ? ORDER BY id LIMIT ?"
    ),
}
"""``(session_id, model, after_key, since, until, limit)``."""


def pending_text(kind: VectorKind, row: tuple[Any, ...]) -> PendingText:
    """A ``PENDING`` row as a :class:`PendingText`."""
    return PendingText(kind, row[0], row[1], int(row[2]), row[3], row[4], row[5])


def put_row(model: str, text: PendingText, vector: bytes) -> tuple[Any, ...]:
    """The ``PUT`` parameters of one text and its vector."""
    if text.kind == "message":
        return (text.part_id, text.id, text.session_id, text.created_at, model, vector)
    return (text.id, text.session_id, text.created_at, model, vector)


def stored_vector(kind: VectorKind, row: tuple[Any, ...]) -> StoredVector:
    """A ``SCAN`` row as a :class:`StoredVector`."""
    return StoredVector(kind, int(row[0]), row[1], row[2], int(row[3]), bytes(row[4]), row[5])


def scan_args(
    session_id: str,
    model: str,
    after_key: int,
    limit: int,
    since: int | None,
    until: int | None,
) -> tuple[Any, ...]:
    """The ``SCAN`` parameters."""
    low = MIN_TIME if since is None else since
    high = MAX_TIME if until is None else until
    return (session_id, model, after_key, low, high, limit)


class SQLVectorStore(VectorStore):
    """:class:`~mnesis.store.vectors.VectorStore` on one database of either backend."""

    part_neighbours: str = SQLITE_PART_NEIGHBOURS
    """The statement that reads the neighbours of parts given by ID (per backend)."""

    def __init__(self, db: Statements) -> None:
        self._db = db

    async def pending(
        self, session_id: str, model: str, kind: VectorKind, limit: int
    ) -> list[PendingText]:
        rows = await self._db.rows(PENDING[kind], (model, session_id, limit))
        if kind == "message" and rows:
            hits = [(r[4], str(r[5]), int(r[2])) for r in rows]
            found = await self._db.rows(self.part_neighbours, (dumps(keys_of(hits)),))
            contexts = contexts_of(hits, found)
            rows = [(*r[:5], contexts[r[4]]) for r in rows]
        return [pending_text(kind, r) for r in rows]

    async def put(self, model: str, rows: Sequence[tuple[PendingText, bytes]]) -> None:
        if not rows:
            return
        await self._db.change_many(
            [
                (PUT[kind], [put_row(model, t, v) for t, v in rows if t.kind == kind])
                for kind in ("message", "summary")
            ]
        )

    async def count(self, session_id: str, model: str, kind: VectorKind) -> int:
        found = await self._db.rows(COUNT[kind], (session_id, model))
        return int(found[0][0]) if found else 0

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
        args = scan_args(session_id, model, after_key, limit, since, until)
        return [stored_vector(kind, r) for r in await self._db.rows(SCAN[kind], args)]
