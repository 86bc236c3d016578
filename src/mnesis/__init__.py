"""mnesis: Lossless Context Management for long-running LLM agents.

Every message goes to an append-only store; each turn a budget-fitting context
is assembled from the current context view; old spans are replaced by summaries
whose lineage leads back to the original messages.

Quick start::

    from mnesis import MnesisSession

    async with MnesisSession.open(model="fake/demo", db_path="demo.db") as session:
        result = await session.send("Hello")

The public names are imported where first used (PEP 562 ``__getattr__``), so
``import mnesis`` loads only :mod:`mnesis.errors`.
"""

import importlib as _importlib
import typing as _typing

from mnesis import errors as _errors
from mnesis.errors import *  # noqa: F403  (every error is public: see mnesis.errors)

if _typing.TYPE_CHECKING:
    from mnesis.config import (
        CompactionConfig,
        FileConfig,
        MnesisConfig,
        OperatorConfig,
        RetrievalConfig,
        SessionConfig,
        StoreConfig,
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

# Where each public name lives (the imports above, for type checkers and readers).
_HOMES: dict[str, str] = {
    **dict.fromkeys(
        [
            "CompactionConfig",
            "FileConfig",
            "MnesisConfig",
            "OperatorConfig",
            "RetrievalConfig",
            "SessionConfig",
            "StoreConfig",
        ],
        "mnesis.config",
    ),
    **dict.fromkeys(["EventBus", "MnesisEvent"], "mnesis.events.bus"),
    **dict.fromkeys(["FileHandleResult", "LargeFileHandler"], "mnesis.files"),
    "FakeLLM": "mnesis.llm.fake",
    **dict.fromkeys(
        [
            "CompactionResult",
            "ContextBreakdown",
            "FinishReason",
            "MessageWithParts",
            "RecordResult",
            "TextDelta",
            "TurnComplete",
            "TurnResult",
            "TurnSnapshot",
        ],
        "mnesis.models.message",
    ),
    **dict.fromkeys(
        ["FileRefPart", "MessagePart", "TextPart", "ToolPart", "ToolStatus"],
        "mnesis.models.parts",
    ),
    "TokenUsage": "mnesis.models.tokens",
    **dict.fromkeys(
        ["AgenticMap", "AgentMapBatch", "AgentMapResult", "LLMMap", "MapBatch", "MapResult"],
        "mnesis.operators",
    ),
    "MnesisSession": "mnesis.session",
    "StorePool": "mnesis.store.pool",
    "TokenEstimator": "mnesis.tokens.estimator",
}


# Hidden from type checkers, which see the imports above: an unknown name stays an error.
if not _typing.TYPE_CHECKING:

    def __getattr__(name: str) -> _typing.Any:
        """Import a public name from its home module on first use, then keep it here."""
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(home), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
