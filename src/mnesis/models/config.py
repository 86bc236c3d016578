"""The documented module path ``mnesis.models.config``: a re-export of :mod:`mnesis.config`
(the configuration sections) and of :class:`~mnesis.models.model_info.ModelInfo`."""

from mnesis.config import (
    CompactionConfig,
    FileConfig,
    MnesisConfig,
    OperatorConfig,
    RetrievalConfig,
    SessionConfig,
    StoreConfig,
)
from mnesis.models.model_info import ModelInfo

__all__ = [
    "CompactionConfig",
    "FileConfig",
    "MnesisConfig",
    "ModelInfo",
    "OperatorConfig",
    "RetrievalConfig",
    "SessionConfig",
    "StoreConfig",
]
