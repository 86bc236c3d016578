"""``part_vectors`` / ``summary_vectors`` on SQLite (writes go through the file's writer thread)."""

from __future__ import annotations

from mnesis.store.shared.vectors import SQLVectorStore
from mnesis.store.sqlite.database import SQLiteDatabase

__all__ = ["SQLiteVectorStore"]


class SQLiteVectorStore(SQLVectorStore):
    """:class:`~mnesis.store.vectors.VectorStore` on one SQLite database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        super().__init__(db, key_column="rowid", lock_session=None)
