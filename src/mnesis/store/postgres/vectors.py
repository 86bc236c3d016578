"""``part_vectors`` / ``summary_vectors`` on PostgreSQL (vectors as ``bytea``, no pgvector)."""

from __future__ import annotations

from mnesis.store.postgres.db import PostgresDatabase
from mnesis.store.shared.hit_contexts import PG_PART_NEIGHBOURS
from mnesis.store.shared.vectors import SQLVectorStore

__all__ = ["PostgresVectorStore"]

_LOCK_SESSION = "SELECT 1 FROM sessions WHERE id = ? FOR NO KEY UPDATE"
"""The session's write lock (as ``rows.LOCK_SESSION``): vector keys then grow in commit
order within a session, which the dense search's cache relies on."""


class PostgresVectorStore(SQLVectorStore):
    """:class:`~mnesis.store.vectors.VectorStore` on one PostgreSQL database."""

    part_neighbours = PG_PART_NEIGHBOURS

    def __init__(self, db: PostgresDatabase) -> None:
        super().__init__(db, key_column="key", lock_session=_LOCK_SESSION)
