"""``part_vectors`` / ``summary_vectors`` for both backends: the statements (``?``
placeholders) and :class:`SQLVectorStore`, which runs them on either database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.codec import dumps
from mnesis.store.shared.hit_contexts import SQLITE_PART_NEIGHBOURS, contexts_of, keys_of
from mnesis.store.shared.statements import Batch, Statements
from mnesis.store.vectors import PendingText, StoredVector, Times, VectorKind, VectorStore

__all__ = [
    "COUNT",
    "EMBEDDED",
    "LAST_KEY",
    "LAST_VECTOR_KEY",
    "PARTS",
    "PENDING",
    "PUT",
    "SCAN",
    "SQLVectorStore",
    "pending_text",
    "put_row",
    "stored_vector",
]

PARTS = "message_parts p JOIN messages m ON m.id = p.message_id"
"""The parts (``p``) with their messages (``m``)."""
EMBEDDED = "p.part_type = 'text' AND p.text_content IS NOT NULL AND NOT m.is_summary"
"""The parts of :data:`PARTS` that get a vector: text of conversation messages."""

PENDING: dict[VectorKind, str] = {
    "message": (
        "SELECT p.message_id, p.session_id, m.created_at, p.text_content, p.id, "
        f"CAST(m.role AS TEXT), p.{{key}} FROM {PARTS} "
        "LEFT JOIN part_vectors v ON v.part_id = p.id AND v.model = ? "
        "WHERE p.session_id = ? AND p.{key} > ? AND p.{key} <= ? "
        f"AND {EMBEDDED} AND v.part_id IS NULL ORDER BY p.{{key}} LIMIT ?"
    ),
    "summary": (
        "SELECT s.id, s.session_id, s.created_at, s.content, NULL, NULL, s.{key} "
        "FROM summaries s LEFT JOIN summary_vectors v ON v.summary_id = s.id AND v.model = ? "
        "WHERE s.session_id = ? AND s.{key} > ? AND s.{key} <= ? AND v.summary_id IS NULL "
        "ORDER BY s.{key} LIMIT ?"
    ),
}
"""Texts of one session without a vector from a model, in a range of row keys:
``(model, session_id, after_key, up_to_key, limit)``; ``{key}`` is the backend's row
key column. A part's row holds its message's role before its key (its context is
rebuilt, see :meth:`SQLVectorStore.pending`)."""

_TABLES: dict[VectorKind, tuple[str, str]] = {
    "message": ("message_parts", "part_vectors"),
    "summary": ("summaries", "summary_vectors"),
}
"""Each kind's texts and its vectors."""

LAST_KEY: dict[VectorKind, str] = {
    kind: f"SELECT max({{key}}) FROM {texts} WHERE session_id = ?"
    for kind, (texts, _) in _TABLES.items()
}
"""The highest row key of a session's parts / summaries: ``(session_id,)``."""

_REPLACE = "DO UPDATE SET model = excluded.model, vector = excluded.vector"
PUT: dict[VectorKind, str] = {
    "message": (
        "INSERT INTO part_vectors (part_id, message_id, session_id, created_at, model, vector) "
        f"VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (part_id) {_REPLACE}"
    ),
    "summary": (
        "INSERT INTO summary_vectors (summary_id, session_id, created_at, model, vector) "
        f"VALUES (?, ?, ?, ?, ?) ON CONFLICT (summary_id) {_REPLACE}"
    ),
}

COUNT: dict[VectorKind, str] = {
    kind: f"SELECT count(*) FROM {vectors} WHERE session_id = ? AND model = ?"
    for kind, (_, vectors) in _TABLES.items()
}

LAST_VECTOR_KEY: dict[VectorKind, str] = {
    kind: f"SELECT max(id) FROM {vectors} WHERE session_id = ? AND model = ?"
    for kind, (_, vectors) in _TABLES.items()
}
"""The highest vector key of a session and model: ``(session_id, model)``."""

_SCAN_RANGE = (
    "WHERE session_id = ? AND model = ? AND id > ? AND created_at >= ? AND created_at < ? "
    "ORDER BY id LIMIT ?"
)
SCAN: dict[VectorKind, str] = {
    "message": (
        "SELECT id, message_id, session_id, created_at, vector, part_id FROM part_vectors "
        + _SCAN_RANGE
    ),
    "summary": (
        "SELECT id, summary_id, session_id, created_at, vector, NULL FROM summary_vectors "
        + _SCAN_RANGE
    ),
}
"""``(session_id, model, after_key, since, until, limit)``."""


def pending_text(kind: VectorKind, row: tuple[Any, ...]) -> PendingText:
    """A ``PENDING`` row as a :class:`PendingText`."""
    return PendingText(kind, row[0], row[1], int(row[2]), row[3], row[4], row[5], int(row[6]))


def put_row(model: str, text: PendingText, vector: bytes) -> tuple[Any, ...]:
    """The ``PUT`` parameters of one text and its vector."""
    if text.kind == "message":
        return (text.part_id, text.id, text.session_id, text.created_at, model, vector)
    return (text.id, text.session_id, text.created_at, model, vector)


def stored_vector(kind: VectorKind, row: tuple[Any, ...]) -> StoredVector:
    """A ``SCAN`` row as a :class:`StoredVector`."""
    return StoredVector(kind, int(row[0]), row[1], row[2], int(row[3]), bytes(row[4]), row[5])


class SQLVectorStore(VectorStore):
    """:class:`~mnesis.store.vectors.VectorStore` on one database of either backend."""

    part_neighbours: str = SQLITE_PART_NEIGHBOURS
    """The statement that reads the neighbours of parts given by ID (per backend)."""

    def __init__(self, db: Statements, *, key_column: str, lock_session: str | None) -> None:
        """``key_column``: the row key of parts and summaries; ``lock_session``: a
        statement locking a session's writes (``(session_id,)``), None where the
        database has one writer at a time."""
        self._db = db
        self._lock = lock_session
        self._pending_sql = {k: sql.format(key=key_column) for k, sql in PENDING.items()}
        self._last_key = {k: sql.format(key=key_column) for k, sql in LAST_KEY.items()}

    async def _pending(
        self, session_id: str, model: str, kind: VectorKind, limit: int, after_key: int, top: int
    ) -> list[PendingText]:
        args = (model, session_id, after_key, top, limit)
        rows = await self._db.rows(self._pending_sql[kind], args)
        if kind == "message" and rows:
            hits = [(r[4], str(r[5]), int(r[2])) for r in rows]
            found = await self._db.rows(self.part_neighbours, (dumps(keys_of(hits)),))
            contexts = contexts_of(hits, found)
            rows = [(*r[:5], contexts[r[4]], r[6]) for r in rows]
        return [pending_text(kind, r) for r in rows]

    async def last_key(self, session_id: str, kind: VectorKind) -> int:
        found = await self._db.rows(self._last_key[kind], (session_id,))
        return int(found[0][0]) if found and found[0][0] is not None else 0

    async def put(self, model: str, rows: Sequence[tuple[PendingText, bytes]]) -> None:
        if not rows:
            return
        batches: list[Batch] = []
        if self._lock is not None:
            batches.append((self._lock, [(s,) for s in sorted({t.session_id for t, _ in rows})]))
        for kind in ("message", "summary"):
            batches.append((PUT[kind], [put_row(model, t, v) for t, v in rows if t.kind == kind]))
        await self._db.change_many(batches)

    async def last_vector_key(self, session_id: str, model: str, kind: VectorKind) -> int:
        found = await self._db.rows(LAST_VECTOR_KEY[kind], (session_id, model))
        return int(found[0][0]) if found and found[0][0] is not None else 0

    async def count(self, session_id: str, model: str, kind: VectorKind) -> int:
        found = await self._db.rows(COUNT[kind], (session_id, model))
        return int(found[0][0]) if found else 0

    async def _scan(
        self, session_id: str, model: str, kind: VectorKind, after: int, limit: int, times: Times
    ) -> list[StoredVector]:
        args = (session_id, model, after, *times, limit)
        return [stored_vector(kind, r) for r in await self._db.rows(SCAN[kind], args)]
