"""Issue 33, item 1: compaction defaults derived from the model's window.

The documented defaults (sized for 200k) stay as documented at 200k; unset settings
scale with the window; settings the user gave win, also after the session is reopened;
``create(..., context_limit=...)`` states a local model's window; an unknown model warns
once. The issue's reproducer (20k window, 60 tool-heavy turns: 55 summaries and a chain
27 deep before) runs here too.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from mnesis import MnesisSession
from mnesis.cli.demo._config import demo_config
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.errors import MnesisConfigError
from mnesis.models import model_info as model_info_module
from mnesis.models.budget import ContextBudget
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import TextPart, ToolPart
from mnesis.models.window import WindowSettings

WINDOWS = (8_000, 16_000, 32_000, 64_000, 128_000, 200_000, 400_000, 1_048_576)


def test_the_documented_defaults_hold_at_200k() -> None:
    s = WindowSettings.derive(200_000, CompactionConfig())
    assert s.compaction_output_budget == 20_000
    assert s.prune_protect_tokens == 40_000
    assert s.prune_minimum_tokens == 20_000
    assert s.fresh_tail_count == 8
    assert s.leaf_target_tokens == 600
    assert s.condensed_target_tokens == 900
    assert s.soft_threshold_fraction == 0.6
    assert s.drain_fraction == 0.5
    budget = ContextBudget.compute(ModelInfo.from_model_string("claude-opus-4"), MnesisConfig())
    assert (budget.context_limit, budget.compaction_buffer) == (200_000, 20_000)


def test_unset_settings_scale_with_the_window_and_stay_sane() -> None:
    previous: WindowSettings | None = None
    for window in WINDOWS:
        s = WindowSettings.derive(window, CompactionConfig())
        model = ModelInfo(model_id="m", context_limit=window, max_output_tokens=window // 8)
        usable = ContextBudget.compute(model, MnesisConfig()).usable
        target = s.drain_target(usable)
        assert 0 < target < s.soft_limit(usable) < usable
        assert s.compaction_output_budget <= window // 10 + 256
        assert s.prune_protect_tokens <= max(1_000, window // 4)
        assert 0 < s.prune_minimum_tokens <= s.prune_protect_tokens
        assert s.fresh_tail_tokens <= max(1_000, window // 8)
        assert s.leaf_target_tokens <= s.condensed_target_tokens < target
        if previous is not None:
            assert s.compaction_output_budget >= previous.compaction_output_budget
            assert s.prune_protect_tokens >= previous.prune_protect_tokens
            assert s.fresh_tail_count >= previous.fresh_tail_count
            assert s.leaf_target_tokens >= previous.leaf_target_tokens
        previous = s
    small = WindowSettings.derive(16_000, CompactionConfig())
    assert small.prune_protect_tokens < 40_000 / 4
    assert small.compaction_output_budget < 20_000 / 4


def test_explicit_settings_win_over_the_derived_ones() -> None:
    config = CompactionConfig(
        prune_protect_tokens=40_000,
        compaction_output_budget=20_000,
        fresh_tail_count=8,
        soft_threshold_fraction=0.6,
        leaf_target_tokens=600,
    )
    s = WindowSettings.derive(16_000, config)
    assert s.prune_protect_tokens == 40_000
    assert s.compaction_output_budget == 20_000
    assert s.fresh_tail_count == 8
    assert s.soft_threshold_fraction == 0.6
    assert s.leaf_target_tokens == 600
    assert s.prune_minimum_tokens < 20_000  # not given: derived
    assigned = CompactionConfig()
    assigned.prune_minimum_tokens = 20_000
    assert WindowSettings.derive(16_000, assigned).prune_minimum_tokens == 20_000


async def test_create_states_the_window_and_a_reopened_session_keeps_deriving(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "w.db")
    config = MnesisConfig(compaction=CompactionConfig(prune_minimum_tokens=12_345))
    session = await MnesisSession.create(
        model="local/qwen-coder", db_path=db, config=config, context_limit=16_000,
        max_output_tokens=2_000,
    )  # fmt: skip
    assert session.model_info.context_limit == 16_000
    assert session.model_info.max_output_tokens == 2_000
    settings = session.compaction_engine.settings(session.model_info)
    assert settings.prune_minimum_tokens == 12_345
    assert (
        settings.prune_protect_tokens
        == WindowSettings.derive(16_000, CompactionConfig()).prune_protect_tokens
    )
    session_id = session.id
    await session.close()

    reopened = await MnesisSession.load(session_id, db_path=db)
    assert reopened.model_info.context_limit == 16_000
    again = reopened.compaction_engine.settings(reopened.model_info)
    assert again == settings
    await reopened.close()

    wider = await MnesisSession.load(session_id, db_path=db, context_limit=64_000)
    assert wider.model_info.context_limit == 64_000
    assert wider.compaction_engine.settings(wider.model_info).prune_minimum_tokens == 12_345
    await wider.close()


@pytest.mark.parametrize("bad", [0, -5, "16k", True, 1.5])
async def test_a_bad_window_is_refused_before_anything_is_written(
    tmp_path: Path, bad: object
) -> None:
    db = str(tmp_path / "w.db")
    with pytest.raises(MnesisConfigError, match="context_limit"):
        await MnesisSession.create(model="local/x", db_path=db, context_limit=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "w.db").exists()


@pytest.mark.parametrize("bad", [-5, "4k"])
async def test_a_bad_window_is_refused_before_a_stored_session_is_opened(
    tmp_path: Path, bad: object
) -> None:
    db = str(tmp_path / "w.db")
    with pytest.raises(MnesisConfigError, match="max_output_tokens"):
        await MnesisSession.load("sess_" + "0" * 26, db_path=db, max_output_tokens=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "w.db").exists()


def test_an_unknown_model_warns_once_and_says_how_to_set_its_window(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_info_module, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="mnesis.models"):
        info = ModelInfo.from_model_string("ollama/my-local-model")
        ModelInfo.from_model_string("ollama/my-local-model")
        ModelInfo.from_model_string("ollama/other", {"context_limit": 8_000})
        ModelInfo.from_model_string("fake/test")
        ModelInfo.from_model_string("claude-sonnet-4")
    assert info.context_limit == 128_000
    warnings = [r.getMessage() for r in caplog.records if r.name == "mnesis.models"]
    assert len(warnings) == 1
    assert "ollama/my-local-model" in warnings[0]
    assert "context_limit" in warnings[0]


def test_the_demo_no_longer_scales_knobs_by_hand() -> None:
    config = demo_config("x.db")
    assert config.compaction.model_fields_set == {"compaction_model"}
    assert config.model_overrides == {"context_limit": 32_000, "max_output_tokens": 2_000}


def _tool_turn(turn: int) -> list[TextPart | ToolPart]:
    output = "\n".join(
        f"tests/test_mod{(turn * 7 + i) % 97}.py::test_case_{i} PASSED in the module under test"
        for i in range(80)
    )[:5_500]
    return [
        TextPart(text=f"Running step {turn}."),
        ToolPart(
            tool_name="bash",
            tool_call_id=f"call_{turn}",
            input={"command": f"pytest -k step{turn}"},
            output=output,
            status={"state": "completed"},
        ),
    ]


async def test_the_20k_reproducer_compacts_rarely_into_a_shallow_dag(tmp_path: Path) -> None:
    config = MnesisConfig(
        model_overrides={"context_limit": 20_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(compaction_model="extractive"),
    )
    session = await MnesisSession.create(
        model="fake/repro", config=config, db_path=str(tmp_path / "r.db")
    )
    for turn in range(60):
        await session.record(f"Step {turn}: run the tests of step {turn}.", _tool_turn(turn))
        await session.compaction_engine.wait_for_pending()
    snapshot = await session.store.integrity_snapshot(session.id)
    summaries = await session.store.get_summaries([s[0] for s in snapshot.summaries])
    leaves = sum(1 for s in summaries if s.kind == "leaf")
    depth = max((s.depth for s in summaries), default=0)
    assert 0 < len(summaries) <= 20, len(summaries)  # 55 before (one per turn)
    assert depth <= math.ceil(math.log(max(leaves, 2), 4)) + 1, (leaves, depth)  # 27 before
    budget = ContextBudget.compute(session.model_info, session.config)
    assert session.context_tokens <= budget.usable
    await session.close()
