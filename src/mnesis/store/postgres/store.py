"""The PostgreSQL backend of :class:`~mnesis.store.base.StoreBackend`.

:class:`PostgresStore` is a :class:`~mnesis.store.shared.wrapper.BackendWrapper` over one
:class:`~mnesis.store.postgres.db.PostgresDatabase` and one named collaborator per topic,
each the PostgreSQL subclass of an engine-neutral base in a module of this package of the
same name: ``store.sessions`` (``sessions.py``), ``store.messages``, ``store.summaries``,
``store.batch``, ``store.search``, ``store.grep_reads``, ``store.purge``,
``store.integrity``, ``store.stats``; the wrapper delegates the interface's methods to
them. The store itself adds the advisory compaction lock and the job queue.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from mnesis.store.jobs import CompactionQueue
from mnesis.store.map_runs import MapRunStore
from mnesis.store.postgres.batch import PostgresBatch
from mnesis.store.postgres.db import PostgresDatabase
from mnesis.store.postgres.grep_reads import PostgresGrepReads
from mnesis.store.postgres.integrity import PostgresIntegrity
from mnesis.store.postgres.jobs import PostgresCompactionQueue
from mnesis.store.postgres.locks import advisory_compaction_lock
from mnesis.store.postgres.map_runs import PostgresMapRunStore
from mnesis.store.postgres.messages import PostgresMessages
from mnesis.store.postgres.purge import PostgresPurge
from mnesis.store.postgres.search import PostgresSearch
from mnesis.store.postgres.sessions import PostgresSessions
from mnesis.store.postgres.stats import PostgresStats
from mnesis.store.postgres.summaries import PostgresSummaries
from mnesis.store.postgres.vectors import PostgresVectorStore
from mnesis.store.shared.lending import Lender
from mnesis.store.shared.wrapper import BackendWrapper
from mnesis.store.vectors import VectorStore

__all__ = ["PostgresStore"]


class PostgresStore(BackendWrapper[PostgresDatabase]):
    """Stores sessions in a PostgreSQL database (pooled connections, append-only triggers)."""

    search: PostgresSearch
    """Also holds the windows a ``newest_first`` search reads and the term counts a
    ``relevance`` search keeps."""

    def __init__(self, db: PostgresDatabase, *, pool: Lender | None, pool_key: str) -> None:
        super().__init__(db, pool=pool, pool_key=pool_key)
        self._map_runs = PostgresMapRunStore(db)
        self._vectors = PostgresVectorStore(db)
        self.sessions = PostgresSessions(db)
        self.messages = PostgresMessages(db)
        self.summaries = PostgresSummaries(db)
        self.batch = PostgresBatch(db)
        self.search = PostgresSearch(db)
        self.grep_reads = PostgresGrepReads(db)
        self.purge = PostgresPurge(db)
        self.integrity = PostgresIntegrity(db)
        self.stats = PostgresStats(db)

    @property
    def location(self) -> str:
        return self.db.location

    @property
    def map_runs(self) -> MapRunStore:
        return self._map_runs

    @property
    def vectors(self) -> VectorStore:
        return self._vectors

    # compaction lock and queue ---------------------------------------------
    def compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float
    ) -> AbstractAsyncContextManager[None]:
        """A per-session advisory lock (:mod:`mnesis.store.postgres.locks`); ``owner``
        and ``ttl_seconds`` are unused: the lock dies with its holder."""
        return advisory_compaction_lock(self.db, session_id)

    def compaction_queue(self) -> CompactionQueue | None:
        return PostgresCompactionQueue(self.db)
