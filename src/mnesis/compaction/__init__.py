"""Compaction: the engine, the summariser ladder and its levels, the pruner."""

from mnesis.compaction.engine import CompactionEngine
from mnesis.compaction.extractive import extractive_summary
from mnesis.compaction.file_ids import append_file_ids_footer, extract_file_ids_from_messages
from mnesis.compaction.levels import (
    SummaryCandidate,
    condense_level1,
    condense_level2,
    condense_level3,
    level1_summarise,
    level2_summarise,
    level3_deterministic,
)
from mnesis.compaction.pruner import PruneResult, ToolOutputPruner, ToolOutputPrunerAsync
from mnesis.compaction.summariser import Summariser

__all__ = [
    "CompactionEngine",
    "PruneResult",
    "Summariser",
    "SummaryCandidate",
    "ToolOutputPruner",
    "ToolOutputPrunerAsync",
    "append_file_ids_footer",
    "condense_level1",
    "condense_level2",
    "condense_level3",
    "extract_file_ids_from_messages",
    "extractive_summary",
    "level1_summarise",
    "level2_summarise",
    "level3_deterministic",
]
