"""The signatures seeds 002 (``mnesis.compaction``) and 004 (``mnesis.context``) document.

Each documented parameter list must be accepted as written: the same names in the
same order with the same documented defaults. Extra keyword-only parameters are
allowed, so are extra positional ones after them with defaults (0.4.0's, issue 31),
and a documented required parameter may have gained a default.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from mnesis.compaction import (
    CompactionEngine,
    SummaryCandidate,
    ToolOutputPruner,
    level1_summarise,
    level2_summarise,
    level3_deterministic,
)
from mnesis.context import BuiltContext, ContextBuilder, LLMMessage

_ = inspect.Parameter.empty


def _positional(func: Callable[..., Any]) -> list[tuple[str, Any]]:
    params = inspect.signature(func).parameters.values()
    return [
        (p.name, p.default)
        for p in params
        if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]


LEVEL_12 = [
    ("messages", _),
    ("model", _),
    ("budget", _),
    ("estimator", _),
    ("llm_call", _),
    ("compaction_prompt", None),
    ("model_context_limit", 200000),
]

DOCUMENTED: list[tuple[Callable[..., Any], list[tuple[str, Any]]]] = [
    (
        CompactionEngine.__init__,
        [
            ("store", _),
            ("dag_store", _),
            ("token_estimator", _),
            ("event_bus", _),
            ("config", _),
            ("id_generator", None),
            ("session_model", None),
        ],
    ),
    (CompactionEngine.is_soft_overflow, [("tokens", _), ("model", _)]),
    (CompactionEngine.is_hard_overflow, [("tokens", _), ("model", _)]),
    (CompactionEngine.is_overflow, [("tokens", _), ("model", _)]),
    (
        CompactionEngine.check_and_trigger,
        [("session_id", _), ("tokens", _), ("model", _), ("abort", None)],
    ),
    (CompactionEngine.wait_for_pending, []),
    (
        CompactionEngine.run_compaction,
        [("session_id", _), ("abort", None), ("model_override", None)],
    ),
    (ToolOutputPruner.__init__, [("store", _), ("estimator", _), ("config", _)]),
    (ToolOutputPruner.prune, [("session_id", _)]),
    (level1_summarise, LEVEL_12),
    (level2_summarise, LEVEL_12),
    (level3_deterministic, [("messages", _), ("budget", _), ("estimator", _)]),
    (ContextBuilder.__init__, [("store", _), ("dag_store", _), ("token_estimator", _)]),
    (
        ContextBuilder.build,
        [("session_id", _), ("model", _), ("system_prompt", _), ("config", _)],
    ),
]


@pytest.mark.parametrize(
    ("func", "expected"), DOCUMENTED, ids=[f.__qualname__ for f, _e in DOCUMENTED]
)
def test_documented_signature(func: Callable[..., Any], expected: list[tuple[str, Any]]) -> None:
    actual = _positional(func)
    # 0.4.0 (issue 31) added positional parameters after the documented ones: they must
    # have defaults, so the documented calls still work.
    assert [name for name, _d in actual][: len(expected)] == [name for name, _d in expected]
    assert all(default is not _ for _name, default in actual[len(expected) :])
    for (name, default), (_n, documented) in zip(actual, expected, strict=False):
        if documented is not _:  # a documented default must be ours; a required one may
            assert default == documented, name  # have gained a default (still accepted)


def test_async_and_sync_as_documented() -> None:
    assert inspect.iscoroutinefunction(CompactionEngine.wait_for_pending)
    assert inspect.iscoroutinefunction(CompactionEngine.run_compaction)
    assert inspect.iscoroutinefunction(ToolOutputPruner.prune)
    assert inspect.iscoroutinefunction(level1_summarise)
    assert inspect.iscoroutinefunction(level2_summarise)
    assert inspect.iscoroutinefunction(ContextBuilder.build)
    assert not inspect.iscoroutinefunction(level3_deterministic)
    assert not inspect.iscoroutinefunction(CompactionEngine.check_and_trigger)
    assert not inspect.iscoroutinefunction(CompactionEngine.is_soft_overflow)


def _fields(cls: type) -> list[tuple[str, Any]]:
    return [(f.name, f.default) for f in dataclasses.fields(cls)]


def test_summary_candidate_fields() -> None:
    assert dataclasses.is_dataclass(SummaryCandidate)
    names = [name for name, _default in _fields(SummaryCandidate)]
    assert names[:6] == [
        "text",
        "token_count",
        "span_start_message_id",
        "span_end_message_id",
        "compaction_level",
        "messages_covered",
    ]
    SummaryCandidate("t", 1, "a", "b", 3, 2)  # constructible positionally as documented


def test_built_context_fields() -> None:
    assert dataclasses.is_dataclass(BuiltContext)
    assert _fields(BuiltContext)[:9] == [
        ("messages", dataclasses.MISSING),
        ("system_prompt", dataclasses.MISSING),
        ("token_estimate", dataclasses.MISSING),
        ("budget", dataclasses.MISSING),
        ("has_summary", dataclasses.MISSING),
        ("oldest_included_message_id", None),
        ("summary_token_count", 0),
        ("raw_message_tokens", 0),
        ("tool_output_tokens", 0),
    ]


def test_llm_message_fields() -> None:
    assert dataclasses.is_dataclass(LLMMessage)
    assert [name for name, _d in _fields(LLMMessage)] == ["role", "content"]
    assert LLMMessage("user", "hi").content == "hi"
    assert LLMMessage("user", [{"type": "text", "text": "hi"}]).role == "user"
