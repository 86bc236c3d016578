"""What the AgenticMap tests share: a map on a test database, sessions that never
compact on their own."""

from __future__ import annotations

from typing import Any

from mnesis import CompactionConfig, MnesisConfig, OperatorConfig, StorePool
from mnesis.llm import FakeLLM
from mnesis.operators import AgenticMap

__all__ = ["NO_AUTO_COMPACTION", "make_map"]

NO_AUTO_COMPACTION = MnesisConfig(compaction=CompactionConfig(auto=False))


def make_map(db_path: str, pool: StorePool, llm: FakeLLM, **config: Any) -> AgenticMap:
    """An AgenticMap of the model ``fake/sub`` on ``db_path`` with ``OperatorConfig(**config)``."""
    return AgenticMap(
        OperatorConfig(**config),
        model="fake/sub",
        db_path=db_path,
        pool=pool,
        llm=llm,
        session_config=NO_AUTO_COMPACTION,
    )
