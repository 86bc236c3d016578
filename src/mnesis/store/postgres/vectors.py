"""``part_vectors`` / ``summary_vectors`` on PostgreSQL (vectors as ``bytea``, no pgvector)."""

from __future__ import annotations

from mnesis.store.postgres.db import PostgresDatabase
from mnesis.store.shared.vectors import SQLVectorStore

__all__ = ["PostgresVectorStore"]


class PostgresVectorStore(SQLVectorStore):
    """:class:`~mnesis.store.vectors.VectorStore` on one PostgreSQL database."""

    def __init__(self, db: PostgresDatabase) -> None:
        super().__init__(db, key_column="key")
