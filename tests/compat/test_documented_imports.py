"""Every documented import line and module path of the seeds imports, and names what it says."""

from __future__ import annotations

import importlib

import pytest

# module -> names the seeds (000, 001, 002, 004) and issue 13 document under that path
DOCUMENTED: dict[str, list[str]] = {
    "mnesis": [
        "MnesisSession",
        "MnesisConfig",
        "CompactionConfig",
        "FileConfig",
        "StoreConfig",
        "TextPart",
        "ToolPart",
        "FileRefPart",
        "TokenUsage",
        "LLMMap",
        "AgenticMap",
        "EventBus",
        "MnesisEvent",
        "TokenEstimator",
        "StorePool",
        "LargeFileHandler",
    ],
    "mnesis.models.config": [
        "MnesisConfig",
        "CompactionConfig",
        "FileConfig",
        "StoreConfig",
        "OperatorConfig",
        "SessionConfig",
        "ModelInfo",
    ],
    "mnesis.models.message": [
        "Message",
        "MessageWithParts",
        "TextPart",
        "ToolPart",
        "ToolStatus",
        "FileRefPart",
        "TokenUsage",
        "ContextBudget",
        "CompactionMarkerPart",
        "MessagePart",
    ],
    "mnesis.models.summary": ["SummaryNode", "FileReference"],
    "mnesis.store.immutable": [
        "ImmutableStore",
        "RawMessagePart",
        "MnesisStoreError",
        "SessionNotFoundError",
        "MessageNotFoundError",
        "SummaryNotFoundError",
        "AppendOnlyViolationError",
    ],
    "mnesis.store.summary_dag": ["SummaryDAGStore"],
    "mnesis.store.pool": ["StorePool"],
    "mnesis.operators.template_utils": ["require_item_variable"],
    "mnesis.events.bus": ["EventBus", "MnesisEvent"],
    "mnesis.context": ["BuiltContext", "ContextBuilder", "LLMMessage"],
    "mnesis.context.builder": ["BuiltContext", "ContextBuilder", "LLMMessage", "ContextBudget"],
    "mnesis.compaction": [
        "CompactionEngine",
        "SummaryCandidate",
        "ToolOutputPruner",
        "ToolOutputPrunerAsync",
        "level1_summarise",
        "level2_summarise",
        "level3_deterministic",
    ],
    "mnesis.compaction.levels": ["level1_summarise", "level2_summarise", "level3_deterministic"],
    "mnesis.compaction.pruner": ["ToolOutputPrunerAsync"],
    "mnesis.compaction.file_ids": ["append_file_ids_footer", "extract_file_ids_from_messages"],
    "mnesis.files.handler": ["LargeFileHandler", "FileHandleResult"],
    "mnesis.tokens": ["TokenEstimator"],
    "mnesis.operators": ["LLMMap", "AgenticMap"],
    "mnesis.session": ["MnesisSession"],
}


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_documented_module_imports_its_names(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in DOCUMENTED[module] if not hasattr(imported, name)]
    assert missing == []


def test_reexports_are_the_same_objects() -> None:
    from mnesis.compaction.pruner import ToolOutputPruner, ToolOutputPrunerAsync
    from mnesis.config import MnesisConfig as Real
    from mnesis.context.builder import ContextBudget as BuilderBudget
    from mnesis.models.config import MnesisConfig
    from mnesis.models.message import CompactionMarkerPart, ContextBudget
    from mnesis.models.parts import CompactionPart
    from mnesis.models.summary import SummaryNode
    from mnesis.operators.template import require_item_variable as real_check
    from mnesis.operators.template_utils import require_item_variable
    from mnesis.store.base import SummaryRecord
    from mnesis.store.dag import SummaryDAGStore as OldPath
    from mnesis.store.summary_dag import SummaryDAGStore

    assert MnesisConfig is Real
    assert ContextBudget is BuilderBudget
    assert CompactionMarkerPart is CompactionPart
    assert SummaryNode.from_record(  # 0.4.0's shape of the store's record (issue 31)
        SummaryRecord("sum_1", "sess_1", "leaf", 0, 2, "text", 3)
    ).to_record() == SummaryRecord("sum_1", "sess_1", "leaf", 0, 2, "text", 3)
    assert require_item_variable is real_check
    assert ToolOutputPrunerAsync is ToolOutputPruner
    assert SummaryDAGStore is OldPath


def test_seed_001_event_example_imports() -> None:
    from mnesis.events.bus import MnesisEvent

    assert MnesisEvent.COMPACTION_COMPLETED.value == "compaction.completed"
    assert MnesisEvent.DOOM_LOOP_DETECTED
