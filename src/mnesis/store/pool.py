"""``StorePool``: one shared database handle per file (or URL) per process.

Sessions acquire a store from a pool and release it on close; the database
closes when its last user releases it. Sessions created without an explicit
pool use the process-wide :meth:`StorePool.default` pool, so hundreds of
sessions on one file share one connection and one writer (on PostgreSQL, one
connection pool per URL).
"""

from __future__ import annotations

import asyncio
import threading
from typing import ClassVar

from mnesis.config import StoreConfig
from mnesis.store.base import StoreBackend
from mnesis.store.factory import (
    DatabaseHandle,
    PooledStore,
    StoreLocation,
    new_backend,
    open_database,
    resolve_location,
)
from mnesis.store.immutable import ImmutableStore

__all__ = ["StorePool"]


class StorePool:
    """Shares database handles between the stores of a process, for either backend."""

    _default: ClassVar[StorePool | None] = None
    _default_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dbs: dict[str, tuple[DatabaseHandle, int]] = {}
        self._write_locks: dict[str, asyncio.Lock] = {}

    @classmethod
    def default(cls) -> StorePool:
        """The process-wide pool used when a session is given none."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    async def acquire(
        self,
        db_path: StoreConfig | str | None = None,
        *,
        wal_mode: bool = True,
        connection_timeout: float = 30.0,
        config: StoreConfig | None = None,
    ) -> ImmutableStore:
        """An initialized store on ``db_path`` (a path or URL, or a :class:`StoreConfig`),
        else on ``config``'s, sharing this pool's handle of that database. With a path,
        ``wal_mode`` and ``connection_timeout`` (0.4.0's) configure the store.

        Raises :class:`~mnesis.errors.MnesisConfigError` for a location no backend takes
        (before anything is opened), a :class:`~mnesis.errors.MnesisStoreError` subclass
        if the database cannot be opened."""
        path: str | None = None
        if isinstance(db_path, StoreConfig):
            config = db_path
        elif db_path is not None:
            path = db_path
            if config is None:
                config = StoreConfig(
                    db_path=db_path, wal_mode=wal_mode, connection_timeout=connection_timeout
                )
        store = ImmutableStore(config, pool=self, db_path=path)
        await store.initialize()
        return store

    async def acquire_backend(
        self, location: StoreLocation, config: StoreConfig | None = None
    ) -> StoreBackend:
        """A backend store on ``location``, opening its database if this pool has not.

        :class:`ImmutableStore` calls this; code outside the store package uses
        :meth:`acquire`."""
        key = location.key
        with self._lock:
            entry = self._dbs.get(key)
            if entry is None:
                db = open_database(location, config)
                self._dbs[key] = (db, 1)
            else:
                db = entry[0]
                self._dbs[key] = (db, entry[1] + 1)
        try:
            await db.open()
        except BaseException:
            await self._release(key, db)
            raise
        return new_backend(location, db, pool=self, pool_key=key)

    async def _release(self, key: str, db: DatabaseHandle) -> None:
        with self._lock:
            entry = self._dbs.get(key)
            if entry is None or entry[0] is not db:
                return
            count = entry[1] - 1
            if count > 0:
                self._dbs[key] = (db, count)
                return
            del self._dbs[key]
        await db.close()

    async def release(self, store: PooledStore) -> None:
        """Give a backend store back (its ``close()`` does); the last release closes the
        database."""
        await self._release(store.pool_key, store.db)

    async def close_all(self) -> None:
        """Close every database of the pool (application teardown)."""
        with self._lock:
            dbs = [db for db, _ in self._dbs.values()]
            self._dbs.clear()
        for db in dbs:
            await db.close()

    async def close_path(self, db_path: str) -> None:
        """Close the database on ``db_path`` (a path or URL) if this pool has it open,
        whoever still uses it (as :meth:`close_all`, for one database)."""
        key = resolve_location(StoreConfig(), db_path).key
        with self._lock:
            entry = self._dbs.pop(key, None)
            self._write_locks.pop(key, None)
        if entry is not None:
            await entry[0].close()

    def write_lock(self, db_path: str) -> asyncio.Lock:
        """0.4.0's per-database write lock, for the caller's own critical sections. The
        store needs none: each database's writes run one at a time on its writer."""
        key = resolve_location(StoreConfig(), db_path).key
        with self._lock:
            return self._write_locks.setdefault(key, asyncio.Lock())

    def open_count(self) -> int:
        """Number of open databases (for diagnostics and tests)."""
        with self._lock:
            return len(self._dbs)
