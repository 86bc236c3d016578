"""``StorePool``: one shared database handle per file (or URL) per process.

Sessions acquire a store from a pool and release it on close; the database
closes when its last user releases it. Sessions created without an explicit
pool use the process-wide :meth:`StorePool.default` pool, so hundreds of
sessions on one file share one connection and one writer (on PostgreSQL, one
connection pool per URL).
"""

from __future__ import annotations

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

    @classmethod
    def default(cls) -> StorePool:
        """The process-wide pool used when a session is given none."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    async def acquire(
        self, config: StoreConfig | None = None, *, db_path: str | None = None
    ) -> ImmutableStore:
        """An initialized store on ``db_path``, else on ``config``'s URL or path, sharing
        this pool's handle of that database.

        Raises :class:`~mnesis.errors.MnesisConfigError` for a location no backend takes
        (before anything is opened), a :class:`~mnesis.errors.MnesisStoreError` subclass
        if the database cannot be opened."""
        store = ImmutableStore(config, pool=self, db_path=db_path)
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

    def open_count(self) -> int:
        """Number of open databases (for diagnostics and tests)."""
        with self._lock:
            return len(self._dbs)
