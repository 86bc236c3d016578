"""Open a store for reading only, whatever the backend.

A SQLite file is opened with ``mode=ro`` (see
:class:`~mnesis.store.sqlite.readonly.ReadOnlySQLiteDatabase`): a missing file is an
error instead of a new database, and nothing on disk changes. A PostgreSQL database is
opened without migrating (a missing or older schema is an error) and with every
transaction read-only (``default_transaction_read_only``): nothing in it changes.
"""

from __future__ import annotations

from mnesis.config import StoreConfig
from mnesis.errors import MnesisStoreError
from mnesis.store.factory import new_backend, open_database, resolve_location
from mnesis.store.immutable import ImmutableStore
from mnesis.store.sqlite.readonly import ReadOnlySQLiteDatabase
from mnesis.store.sqlite.store import SQLiteStore

__all__ = ["open_read_only"]


async def open_read_only(config: StoreConfig) -> ImmutableStore:
    """An initialised, read-only :class:`ImmutableStore` on ``config``'s location.

    Raises a :class:`~mnesis.errors.MnesisStoreError` subclass for a missing, empty,
    foreign or unreadable database; writes through the store raise
    :class:`~mnesis.errors.StoreReadOnlyError`. Close it with ``await store.close()``.
    """
    location = resolve_location(config)
    if location.backend == "sqlite":
        if location.target == ":memory:":
            raise MnesisStoreError("an in-memory database holds no sessions; pass --db PATH")
        db = ReadOnlySQLiteDatabase(location.target, config)
        try:
            await db.open()
        except BaseException:
            await db.close()
            raise
        return ImmutableStore.over(SQLiteStore(db, pool=None, pool_key=db.path))
    handle = open_database(location, config, read_only=True)
    try:
        await handle.open()
    except BaseException:
        await handle.close()
        raise
    return ImmutableStore.over(new_backend(location, handle, pool=None, pool_key=location.key))
