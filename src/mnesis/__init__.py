"""mnesis: Lossless Context Management for long-running LLM agents.

Every message goes to an append-only store; each turn a budget-fitting context
is assembled from the current context view; old spans are replaced by summaries
whose lineage leads back to the original messages.

Quick start::

    from mnesis import MnesisSession

    async with MnesisSession.open(model="fake/demo", db_path="demo.db") as session:
        result = await session.send("Hello")
"""

from mnesis.config import (
    CompactionConfig,
    FileConfig,
    MnesisConfig,
    OperatorConfig,
    RetrievalConfig,
    SessionConfig,
    StoreConfig,
)
from mnesis.errors import (
    AppendOnlyViolationError,
    CompactionError,
    CompactionLockedError,
    ContextOverflowError,
    FileAccessError,
    FileChangedError,
    FileMissingError,
    FileReferenceNotFoundError,
    InvalidArgumentError,
    LLMError,
    LLMResponseError,
    LLMTimeoutError,
    MessageNotFoundError,
    MissingDependencyError,
    MnesisConfigError,
    MnesisError,
    MnesisStoreError,
    NotFoundError,
    OutOfScopeError,
    PartNotFoundError,
    SessionClosedError,
    SessionNotFoundError,
    StoreBusyError,
    StoreCorruptError,
    StoreFullError,
    StoreReadOnlyError,
    SummaryNotFoundError,
)
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.files import FileHandleResult, LargeFileHandler
from mnesis.llm.fake import FakeLLM
from mnesis.models.message import (
    CompactionResult,
    ContextBreakdown,
    FinishReason,
    MessageWithParts,
    RecordResult,
    TextDelta,
    TurnComplete,
    TurnResult,
    TurnSnapshot,
)
from mnesis.models.parts import FileRefPart, MessagePart, TextPart, ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.operators import (
    AgenticMap,
    AgentMapBatch,
    AgentMapResult,
    LLMMap,
    MapBatch,
    MapResult,
)
from mnesis.session import MnesisSession
from mnesis.store.pool import StorePool
from mnesis.tokens.estimator import TokenEstimator

__version__ = "0.1.0"

__all__ = [
    "AgentMapBatch",
    "AgentMapResult",
    "AgenticMap",
    "AppendOnlyViolationError",
    "CompactionConfig",
    "CompactionError",
    "CompactionLockedError",
    "CompactionResult",
    "ContextBreakdown",
    "ContextOverflowError",
    "EventBus",
    "FakeLLM",
    "FileAccessError",
    "FileChangedError",
    "FileConfig",
    "FileHandleResult",
    "FileMissingError",
    "FileRefPart",
    "FileReferenceNotFoundError",
    "FinishReason",
    "InvalidArgumentError",
    "LLMError",
    "LLMMap",
    "LLMResponseError",
    "LLMTimeoutError",
    "LargeFileHandler",
    "MapBatch",
    "MapResult",
    "MessageNotFoundError",
    "MessagePart",
    "MessageWithParts",
    "MissingDependencyError",
    "MnesisConfig",
    "MnesisConfigError",
    "MnesisError",
    "MnesisEvent",
    "MnesisSession",
    "MnesisStoreError",
    "NotFoundError",
    "OperatorConfig",
    "OutOfScopeError",
    "PartNotFoundError",
    "RecordResult",
    "RetrievalConfig",
    "SessionClosedError",
    "SessionConfig",
    "SessionNotFoundError",
    "StoreBusyError",
    "StoreConfig",
    "StoreCorruptError",
    "StoreFullError",
    "StorePool",
    "StoreReadOnlyError",
    "SummaryNotFoundError",
    "TextDelta",
    "TextPart",
    "TokenEstimator",
    "TokenUsage",
    "ToolPart",
    "ToolStatus",
    "TurnComplete",
    "TurnResult",
    "TurnSnapshot",
    "__version__",
]
