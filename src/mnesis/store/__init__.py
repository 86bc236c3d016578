"""Storage: the append-only store interface, its backends and the connection pool."""

from mnesis.store.base import (
    AppendedMessage,
    CompactionCommit,
    ContextItem,
    FileReference,
    ImmutableStore,
    NewMessage,
    SessionRecord,
    SummaryRecord,
)
from mnesis.store.dag import SummaryDAGStore
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
    "StorePool",
    "SummaryDAGStore",
    "SummaryRecord",
]
