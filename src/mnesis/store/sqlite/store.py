"""The SQLite implementation of :class:`~mnesis.store.base.StoreBackend`.

:class:`SQLiteStore` is a :class:`~mnesis.store.shared.wrapper.BackendWrapper` over one
:class:`~mnesis.store.sqlite.database.SQLiteDatabase` and one named collaborator per
topic, each the SQLite subclass of an engine-neutral base in a module of this package of
the same name: ``store.sessions`` (``sessions.py``), ``store.messages``,
``store.summaries``, ``store.batch``, ``store.search``, ``store.grep_reads``,
``store.purge``, ``store.integrity``, ``store.stats``, all working on the same database;
the wrapper delegates the interface's methods to them. Arguments arrive already checked
by :class:`~mnesis.store.immutable.ImmutableStore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnesis.store.map_runs import MapRunStore
from mnesis.store.shared.wrapper import BackendWrapper
from mnesis.store.sqlite.batch import SQLiteBatch
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.grep_reads import SQLiteGrepReads
from mnesis.store.sqlite.integrity import SQLiteIntegrity
from mnesis.store.sqlite.map_runs import SQLiteMapRunStore
from mnesis.store.sqlite.messages import SQLiteMessages
from mnesis.store.sqlite.purge import SQLitePurge
from mnesis.store.sqlite.search import SQLiteSearch
from mnesis.store.sqlite.sessions import SQLiteSessions
from mnesis.store.sqlite.stats import SQLiteStats
from mnesis.store.sqlite.summaries import SQLiteSummaries
from mnesis.store.sqlite.vectors import SQLiteVectorStore
from mnesis.store.vectors import VectorStore

if TYPE_CHECKING:
    from mnesis.store.pool import StorePool

__all__ = ["SQLiteStore"]


class SQLiteStore(BackendWrapper[SQLiteDatabase]):
    """Stores sessions in one SQLite file (WAL, foreign keys, append-only triggers)."""

    batch: SQLiteBatch
    """Also writes the rows of a batch prepared away from the store (an import's)."""

    def __init__(self, db: SQLiteDatabase, *, pool: StorePool | None, pool_key: str) -> None:
        super().__init__(db, pool=pool, pool_key=pool_key)
        self.sessions = SQLiteSessions(db)
        self.messages = SQLiteMessages(db)
        self.summaries = SQLiteSummaries(db)
        self.batch = SQLiteBatch(db)
        self.search = SQLiteSearch(db)
        self.grep_reads = SQLiteGrepReads(db)
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
