"""``StorePool``: one shared database handle per file (or URL) per process.

Sessions acquire a store from a pool and release it on close; the database
closes when its last user releases it. Sessions created without an explicit
pool use the process-wide :meth:`StorePool.default` pool, so hundreds of
sessions on one file share one connection and one writer.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, ClassVar

from mnesis.config import StoreConfig

if TYPE_CHECKING:
    from mnesis.store.base import ImmutableStore
    from mnesis.store.sqlite import SQLiteStore
    from mnesis.store.sqlite_db import SQLiteDatabase

__all__ = ["StorePool"]


class StorePool:
    """Shares database handles between the sessions of a process."""

    _default: ClassVar[StorePool | None] = None
    _default_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dbs: dict[str, tuple[SQLiteDatabase, int]] = {}

    @classmethod
    def default(cls) -> StorePool:
        """The process-wide pool used when a session is given none."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    @staticmethod
    def _key(path: str) -> str:
        return path if path == ":memory:" else os.path.realpath(os.path.expanduser(path))

    async def acquire(
        self, config: StoreConfig | None = None, *, db_path: str | None = None
    ) -> ImmutableStore:
        """Return a store for ``db_path`` (or ``config.db_path``), sharing the connection."""
        cfg = config or StoreConfig()
        if cfg.database_url:
            raise NotImplementedError(
                f"the PostgreSQL backend is not built yet (database_url={cfg.database_url!r}); "
                "use an SQLite db_path for now"
            )
        return await self.acquire_sqlite(db_path or cfg.db_path, cfg)

    async def acquire_sqlite(self, path: str, config: StoreConfig | None = None) -> SQLiteStore:
        """Return a :class:`SQLiteStore` on ``path``, opening the file if needed."""
        from mnesis.store.sqlite import SQLiteStore
        from mnesis.store.sqlite_db import SQLiteDatabase

        key = self._key(path)
        with self._lock:
            entry = self._dbs.get(key)
            if entry is None:
                db = SQLiteDatabase(path, config)
                self._dbs[key] = (db, 1)
            else:
                db = entry[0]
                self._dbs[key] = (db, entry[1] + 1)
        try:
            await db.open()
        except BaseException:
            await self._release(key, db)
            raise
        return SQLiteStore(db, pool=self, pool_key=key)

    async def _release(self, key: str, db: SQLiteDatabase) -> None:
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

    async def release(self, store: SQLiteStore) -> None:
        """Give a store back; the last release closes the database."""
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
