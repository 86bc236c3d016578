"""Storage: the validating store facade, the backend interface, the backends and the pool.

Core code uses :class:`ImmutableStore` (``ImmutableStore(config.store, pool=pool)`` then
``await store.initialize()``; the configured URL or path picks SQLite or PostgreSQL).
Backends implement :class:`~mnesis.store.base.StoreBackend`.
"""

from mnesis.store.base import (
    AppendedMessage,
    CompactionCommit,
    ContextItem,
    FileReference,
    NewMessage,
    SessionRecord,
    StoreBackend,
    SummaryRecord,
)
from mnesis.store.dag import SummaryDAGStore
from mnesis.store.immutable import ImmutableStore
from mnesis.store.pool import StorePool
from mnesis.store.sqlite import SQLiteStore

__all__ = [
    "AppendedMessage",
    "CompactionCommit",
    "ContextItem",
    "FileReference",
    "ImmutableStore",
    "NewMessage",
    "SQLiteStore",
    "SessionRecord",
    "StoreBackend",
    "StorePool",
    "SummaryDAGStore",
    "SummaryRecord",
]
