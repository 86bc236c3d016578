"""Compaction: the engine, the three levels, the pruner and the extractive summariser."""

from mnesis.compaction.engine import CompactionEngine
from mnesis.compaction.extractive import extractive_summary
from mnesis.compaction.levels import (
    SummaryCandidate,
    condense_level1,
    condense_level2,
    condense_level3,
    level1_summarise,
    level2_summarise,
    level3_deterministic,
)
from mnesis.compaction.pruner import PruneResult, ToolOutputPruner

__all__ = [
    "CompactionEngine",
    "PruneResult",
    "SummaryCandidate",
    "ToolOutputPruner",
    "condense_level1",
    "condense_level2",
    "condense_level3",
    "extractive_summary",
    "level1_summarise",
    "level2_summarise",
    "level3_deterministic",
]
