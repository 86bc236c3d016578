"""The SQLite implementation of :class:`~mnesis.store.base.StoreBackend`.

:class:`SQLiteStore` owns the database handle, sessions and file references, and one
named collaborator per topic, each the SQLite subclass of an engine-neutral base in a
module of this package of the same name: ``store.messages`` (``messages.py``),
``store.summaries``, ``store.batch``, ``store.purge``, ``store.integrity``,
``store.stats``, all working on the same
:class:`~mnesis.store.sqlite.database.SQLiteDatabase`;
:class:`~mnesis.store.shared.wrapper.BackendWrapper` delegates the interface's methods
to them. Search and grep's reads are still mixins (``search``, ``grep_reads``), pending
their collaborator. Arguments arrive already checked by
:class:`~mnesis.store.immutable.ImmutableStore`.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from mnesis.models.clock import now_ms
from mnesis.store.base import FileReference, SessionRecord
from mnesis.store.map_runs import MapRunStore
from mnesis.store.shared import sessions
from mnesis.store.shared.lending import LentStore
from mnesis.store.shared.sessions import SessionReads
from mnesis.store.shared.wrapper import BackendWrapper
from mnesis.store.sqlite.batch import SQLiteBatch
from mnesis.store.sqlite.grep_reads import GrepReadsMixin
from mnesis.store.sqlite.integrity import SQLiteIntegrity
from mnesis.store.sqlite.map_runs import SQLiteMapRunStore
from mnesis.store.sqlite.messages import SQLiteMessages
from mnesis.store.sqlite.purge import SQLitePurge
from mnesis.store.sqlite.rows import _get_file, insert_session
from mnesis.store.sqlite.search import SearchMixin
from mnesis.store.sqlite.stats import SQLiteStats
from mnesis.store.sqlite.summaries import SQLiteSummaries
from mnesis.store.sqlite.vectors import SQLiteVectorStore
from mnesis.store.vectors import VectorStore

if TYPE_CHECKING:
    from mnesis.store.pool import StorePool
    from mnesis.store.sqlite.database import SQLiteDatabase

__all__ = ["SQLiteStore"]


class SQLiteStore(
    SearchMixin,
    GrepReadsMixin,
    SessionReads,
    LentStore["SQLiteDatabase"],
    BackendWrapper,
):
    """Stores sessions in one SQLite file (WAL, foreign keys, append-only triggers)."""

    batch: SQLiteBatch
    """Also writes the rows of a batch prepared away from the store (an import's)."""

    def __init__(self, db: SQLiteDatabase, *, pool: StorePool | None, pool_key: str) -> None:
        super().__init__(db, pool=pool, pool_key=pool_key)
        self.messages = SQLiteMessages(db)
        self.summaries = SQLiteSummaries(db)
        self.batch = SQLiteBatch(db)
        self.purge = SQLitePurge(db)
        self.integrity = SQLiteIntegrity(db)
        self.stats = SQLiteStats(db)

    @property
    def path(self) -> str:
        """The database file path."""
        return self.db.path

    @property
    def location(self) -> str:
        return self.db.path

    @property
    def map_runs(self) -> MapRunStore:
        return SQLiteMapRunStore(self.db)

    @property
    def vectors(self) -> VectorStore:
        return SQLiteVectorStore(self.db)

    # sessions (the reads: SessionReads) -------------------------------------------
    async def create_session(self, record: SessionRecord) -> None:
        now = now_ms()

        def _insert(conn: sqlite3.Connection) -> None:
            insert_session(conn, record, now)

        await self.db.write(_insert)

    # files ----------------------------------------------------------------
    async def store_file_reference(self, ref: FileReference) -> FileReference:
        ref.created_at = ref.created_at or now_ms()

        def _store(conn: sqlite3.Connection) -> FileReference:
            conn.execute(
                sessions.FILE_INSERT.replace("INSERT", "INSERT OR IGNORE", 1),
                sessions.file_row(ref),
            )
            found = _get_file(conn, ref.content_id)
            assert found is not None
            return found

        return await self.db.write(_store)

    async def used_bytes(self) -> int:
        def _used(conn: sqlite3.Connection) -> int:
            pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
            free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
            return (pages - free) * int(conn.execute("PRAGMA page_size").fetchone()[0])

        return await self.db.read(_used)
