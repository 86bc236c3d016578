"""mnesis: Lossless Context Management for long-running LLM agents.

Every message goes to an append-only store; each turn a budget-fitting context
is assembled from the current context view; old spans are replaced by summaries
whose lineage leads back to the original messages.

Quick start::

    from mnesis import MnesisSession

    async with MnesisSession.open(model="fake/demo", db_path="demo.db") as session:
        result = await session.send("Hello")
"""

from mnesis import errors as _errors
from mnesis.config import (
    CompactionConfig,
    FileConfig,
    MnesisConfig,
    OperatorConfig,
    RetrievalConfig,
    SessionConfig,
    StoreConfig,
)
from mnesis.errors import *  # noqa: F403  (every error is public: see mnesis.errors)
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
    "CompactionConfig",
    "CompactionResult",
    "ContextBreakdown",
    "EventBus",
    "FakeLLM",
    "FileConfig",
    "FileHandleResult",
    "FileRefPart",
    "FinishReason",
    "LLMMap",
    "LargeFileHandler",
    "MapBatch",
    "MapResult",
    "MessagePart",
    "MessageWithParts",
    "MnesisConfig",
    "MnesisEvent",
    "MnesisSession",
    "OperatorConfig",
    "RecordResult",
    "RetrievalConfig",
    "SessionConfig",
    "StoreConfig",
    "StorePool",
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
__all__ += _errors.__all__  # and the rest of mnesis.errors, as API.md promises
