"""The public surface: what ``import mnesis`` offers, and what it does not drag in.

Every top-level name API.md promises is checked, operators included.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types

import pytest

import mnesis
import mnesis.errors

API_NAMES = [
    # operators
    "LLMMap",
    "AgenticMap",
    "MapResult",
    "MapBatch",
    "AgentMapResult",
    "AgentMapBatch",
    # session and results
    "MnesisSession",
    "TurnResult",
    "RecordResult",
    "CompactionResult",
    "TurnSnapshot",
    "ContextBreakdown",
    "TokenUsage",
    "FinishReason",
    "TextDelta",
    "TurnComplete",
    # parts
    "MessagePart",
    "TextPart",
    "ToolPart",
    "FileRefPart",
    "MessageWithParts",
    # config
    "MnesisConfig",
    "CompactionConfig",
    "FileConfig",
    "SessionConfig",
    "StoreConfig",
    "OperatorConfig",
    # events and tokens
    "EventBus",
    "MnesisEvent",
    "TokenEstimator",
    # errors named explicitly
    "MnesisStoreError",
    "SessionNotFoundError",
    "SessionClosedError",
]

SEED_MODULES = {
    "mnesis.context": ["ContextBuilder", "BuiltContext", "LLMMessage"],
    "mnesis.compaction": [
        "CompactionEngine",
        "SummaryCandidate",
        "ToolOutputPruner",
        "level1_summarise",
        "level2_summarise",
        "level3_deterministic",
    ],
    "mnesis.events.bus": ["EventBus", "MnesisEvent"],
    "mnesis.store": ["ImmutableStore", "SummaryDAGStore", "StorePool"],
    "mnesis.tokens": ["TokenEstimator"],
    "mnesis.files": ["LargeFileHandler", "FileHandleResult"],
    "mnesis.operators": ["LLMMap", "AgenticMap"],
    "mnesis.models": ["ModelInfo"],
}

OPTIONAL_HEAVY_MODULES = ["litellm", "asyncpg", "mcp", "prometheus_client", "tiktoken"]


class TestTopLevelExports:
    @pytest.mark.parametrize("name", API_NAMES)
    def test_every_api_name_is_exported(self, name: str) -> None:
        assert name in mnesis.__all__
        assert getattr(mnesis, name) is not None

    def test_every_error_is_exported_at_the_top_level(self) -> None:
        # API.md: "MnesisStoreError, SessionNotFoundError, SessionClosedError
        # (plus the rest of mnesis.errors)".
        missing = [name for name in mnesis.errors.__all__ if name not in mnesis.__all__]
        assert missing == []
        for name in mnesis.errors.__all__:
            assert getattr(mnesis, name) is getattr(mnesis.errors, name)

    def test_every_name_in_all_exists(self) -> None:
        missing = [name for name in mnesis.__all__ if not hasattr(mnesis, name)]
        assert missing == []

    def test_all_has_no_duplicates(self) -> None:
        assert len(mnesis.__all__) == len(set(mnesis.__all__))

    def test_nothing_public_leaks_beyond_all_except_submodules(self) -> None:
        leaked = [
            name
            for name, value in vars(mnesis).items()
            if not name.startswith("_")
            and not isinstance(value, types.ModuleType)
            and name not in mnesis.__all__
        ]
        assert leaked == []

    def test_exported_classes_are_the_defining_module_objects(self) -> None:
        from mnesis.config import MnesisConfig
        from mnesis.session import MnesisSession

        assert mnesis.MnesisConfig is MnesisConfig
        assert mnesis.MnesisSession is MnesisSession

    def test_the_finish_reasons_are_the_documented_ones(self) -> None:
        assert {r.value for r in mnesis.FinishReason} == {
            "stop",
            "max_tokens",
            "tool_calls",
            "length",
            "error",
        }


class TestSeedModules:
    @pytest.mark.parametrize(
        ("module", "name"),
        [(module, name) for module, names in SEED_MODULES.items() for name in names],
    )
    def test_the_module_paths_the_seeds_name_work(self, module: str, name: str) -> None:
        imported = importlib.import_module(module)
        assert hasattr(imported, name)
        if hasattr(imported, "__all__"):
            assert name in imported.__all__


class TestImportCost:
    def test_importing_mnesis_loads_no_optional_heavy_dependency(self) -> None:
        code = (
            "import json, sys\n"
            "import mnesis\n"
            f"heavy = {OPTIONAL_HEAVY_MODULES!r}\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert json.loads(done.stdout) == []
