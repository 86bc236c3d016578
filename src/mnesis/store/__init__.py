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
from mnesis.store.immutable import (
    DuplicateIDError,
    ImmutableFieldError,
    ImmutableStore,
    MessageNotFoundError,
    MnesisStoreError,
    PartNotFoundError,
    RawMessagePart,
    Session,
    SessionNotFoundError,
)
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
__all__ += [  # 0.4.0's names at this path (issue 31)
    "DuplicateIDError",
    "ImmutableFieldError",
    "MessageNotFoundError",
    "MnesisStoreError",
    "PartNotFoundError",
    "RawMessagePart",
    "Session",
    "SessionNotFoundError",
]
