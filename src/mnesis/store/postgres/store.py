"""The PostgreSQL backend of :class:`~mnesis.store.base.StoreBackend`.

:class:`PostgresStore` owns the database handle, sessions, file references, the advisory
compaction lock and the job queue, and one named collaborator per topic, each the
PostgreSQL subclass of an engine-neutral base in a module of this package of the same
name: ``store.messages`` (``messages.py``), ``store.summaries``, ``store.batch``,
``store.purge``, ``store.integrity``, ``store.stats``;
:class:`~mnesis.store.shared.wrapper.BackendWrapper` delegates the interface's methods
to them. Search and grep's reads are still mixins (``search``, ``grep_reads``), pending
their collaborator.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from mnesis.errors import SessionNotFoundError
from mnesis.store.base import FileReference, SessionRecord
from mnesis.store.jobs import CompactionQueue
from mnesis.store.map_runs import MapRunStore
from mnesis.store.postgres.batch import PostgresBatch
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.grep_reads import GrepReadsMixin
from mnesis.store.postgres.integrity import PostgresIntegrity
from mnesis.store.postgres.jobs import PostgresCompactionQueue
from mnesis.store.postgres.locks import advisory_compaction_lock
from mnesis.store.postgres.map_runs import PostgresMapRunStore
from mnesis.store.postgres.messages import PostgresMessages
from mnesis.store.postgres.purge import PostgresPurge
from mnesis.store.postgres.rows import (
    fetch_one,
    get_file,
    now_ms,
)
from mnesis.store.postgres.search import SearchMixin
from mnesis.store.postgres.stats import PostgresStats
from mnesis.store.postgres.summaries import PostgresSummaries
from mnesis.store.postgres.term_counts import TermCounts
from mnesis.store.postgres.vectors import PostgresVectorStore
from mnesis.store.shared import sessions as shared
from mnesis.store.shared.lending import Lender, LentStore
from mnesis.store.shared.purge import SESSION_EXISTS
from mnesis.store.shared.sessions import SessionReads
from mnesis.store.shared.sql import pg
from mnesis.store.shared.wrapper import BackendWrapper
from mnesis.store.vectors import VectorStore

__all__ = ["PostgresStore"]


class PostgresStore(
    SearchMixin,
    GrepReadsMixin,
    SessionReads,
    LentStore[PostgresDatabase],
    BackendWrapper,
):
    """Stores sessions in a PostgreSQL database (pooled connections, append-only triggers)."""

    def __init__(self, db: PostgresDatabase, *, pool: Lender | None, pool_key: str) -> None:
        super().__init__(db, pool=pool, pool_key=pool_key)
        self._map_runs = PostgresMapRunStore(db)
        self._vectors = PostgresVectorStore(db)
        self.term_counts = TermCounts()
        self.messages = PostgresMessages(db)
        self.summaries = PostgresSummaries(db)
        self.batch = PostgresBatch(db)
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

    # sessions (the reads: SessionReads) -------------------------------------------
    async def create_session(self, record: SessionRecord) -> None:
        now = now_ms()
        record.created_at = record.created_at or now
        record.updated_at = record.updated_at or now

        async def _insert(conn: Conn) -> None:
            if record.parent_id is not None and not await fetch_one(
                conn, pg(SESSION_EXISTS), (record.parent_id,)
            ):
                raise SessionNotFoundError(record.parent_id)
            await conn.execute(pg(shared.SESSION_INSERT), shared.session_row(record))

        await self.db.write(_insert)

    # compaction lock and queue ---------------------------------------------
    def compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float
    ) -> AbstractAsyncContextManager[None]:
        """A per-session advisory lock (:mod:`mnesis.store.postgres.locks`); ``owner``
        and ``ttl_seconds`` are unused: the lock dies with its holder."""
        return advisory_compaction_lock(self.db, session_id)

    def compaction_queue(self) -> CompactionQueue | None:
        return PostgresCompactionQueue(self.db)

    # files ----------------------------------------------------------------
    async def store_file_reference(self, ref: FileReference) -> FileReference:
        ref.created_at = ref.created_at or now_ms()

        async def _store(conn: Conn) -> FileReference:
            await conn.execute(
                pg(shared.FILE_INSERT) + " ON CONFLICT DO NOTHING", shared.file_row(ref)
            )
            found = await get_file(conn, ref.content_id)
            assert found is not None
            return found

        return await self.db.write(_store)

    async def used_bytes(self) -> int:
        async def _used(conn: Conn) -> int:
            cur = await conn.execute(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
            )
            row = await cur.fetchone()
            return int(row[0]) if row is not None else 0

        return await self.db.read(_used)
