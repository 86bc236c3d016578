"""The SQLite backend (the embedded default): one file, WAL, one writer thread per file.

Only :class:`SQLiteStore` and :class:`SQLiteDatabase` are public; the other modules of
this package are the backend's private parts (one per topic of the
:class:`~mnesis.store.base.StoreBackend` interface, their shared SQL in ``rows``, the
schema in ``migrations``). Core code never uses them: it talks to
:class:`~mnesis.store.immutable.ImmutableStore`.
"""

from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteDatabase", "SQLiteStore"]
