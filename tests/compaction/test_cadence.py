"""Issue 33, items 2 and 3: compaction is rare at every window size, the pruner works at
small windows, and the summary DAG stays logarithmic in its leaves.

Every session states its window (``context_limit``) and leaves the compaction settings
unset. A turn is a fixed share of the window (4 %), so the same number of turns makes
the same demand at 16k and at 200k; the benchmark ``bench_windows.py`` replays
real-shaped turns of fixed size instead.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from mnesis import MnesisSession
from mnesis.compaction.planner import plan_condense
from mnesis.config import MnesisConfig
from mnesis.events.bus import MnesisEvent
from mnesis.models.budget import ContextBudget
from mnesis.models.parts import MessagePart, TextPart, ToolPart
from mnesis.store.base import ContextItem

TURNS = 40
TURN_SHARE = 0.04


def depth_bound(leaves: int, fan_in: int = 4) -> int:
    """``ceil(log_fan_in(leaves)) + 1``."""
    return math.ceil(math.log(max(leaves, 2)) / math.log(fan_in) - 1e-9) + 1


def _text(turn: int, chars: int) -> str:
    words = " ".join(
        f"module_{(turn + i) % 17} handler_{i} returned status {200 + i % 5}" for i in range(40)
    )
    sentence = f"In turn {turn} the service under src/service was checked: {words}. "
    return (sentence * (chars // len(sentence) + 1))[:chars]


def _assistant(kind: str, turn: int, chars: int) -> list[MessagePart]:
    if kind == "chat":
        return [TextPart(text=_text(turn, chars))]
    return [
        TextPart(text=f"Checking step {turn}."),
        ToolPart(
            tool_name="bash",
            tool_call_id=f"call_{turn}",
            input={"command": f"make test STEP={turn}"},
            output=_text(turn, chars),
            status={"state": "completed"},
        ),
    ]


async def _summarise(messages: list[dict[str, Any]]) -> str:
    """The scripted summarisation model: a short deterministic summary of its input."""
    text = str(messages[-1]["content"])
    return f"Summary of {len(text):,} characters: the service modules were checked."


@pytest.mark.parametrize("kind", ["chat", "tool"])
@pytest.mark.parametrize("window", [16_000, 32_000, 128_000, 200_000])
async def test_compaction_is_rare_and_the_dag_shallow(
    tmp_path: Path, window: int, kind: str
) -> None:
    session = await MnesisSession.create(
        model="local/model",
        llm=_summarise,
        db_path=str(tmp_path / "c.db"),
        config=MnesisConfig(),
        context_limit=window,
        max_output_tokens=window // 8,
    )
    runs: list[dict[str, object]] = []
    session.subscribe(MnesisEvent.COMPACTION_COMPLETED, lambda _e, p: runs.append(p))
    chars = int(window * TURN_SHARE * 3.6)
    budget = ContextBudget.compute(session.model_info, session.config)
    for turn in range(TURNS):
        await session.record(f"Turn {turn}: next step.", _assistant(kind, turn, chars))
        await session.compaction_engine.wait_for_pending()
        assert session.context_tokens <= budget.usable
    working = [r for r in runs if r["level_used"] or r["pruned_tool_outputs"]]
    assert 1 <= len(working) <= TURNS // 5, [r["stop_reason"] for r in runs]
    assert all(r["stop_reason"] == "done" for r in working), [r["stop_detail"] for r in runs]
    if kind == "tool":
        assert any(r["pruned_tool_outputs"] for r in working), "the pruner never ran"
    snapshot = await session.store.integrity_snapshot(session.id)
    summaries = await session.store.get_summaries([s[0] for s in snapshot.summaries])
    leaves = sum(1 for s in summaries if s.kind == "leaf")
    assert max((s.depth for s in summaries), default=0) <= depth_bound(leaves)
    await session.close()


def _summary(position: int, summary_id: str) -> ContextItem:
    return ContextItem(position=position, item_type="summary", item_id=summary_id, tokens=300)


@pytest.mark.parametrize("area", [2, 5])
def test_pressure_merges_never_deepen_past_the_log_bound(area: int) -> None:
    """A context that may hold only ``area`` summaries, fed 700 leaves: carries plus
    pressure merges keep every depth within ceil(log4(leaves)) + 1."""
    depths: dict[str, int] = {}
    leaves: dict[str, int] = {}
    context: list[str] = []
    made = 0
    worst = 0
    for leaf in range(1, 701):
        made += 1
        sid = f"s{made}"
        depths[sid], leaves[sid] = 0, 1
        context.append(sid)
        for pressure in (False, True):
            while True:
                if pressure and len(context) <= area:
                    break
                items = [_summary(i, s) for i, s in enumerate(context)]
                run = plan_condense(items, depths, pressure=pressure, leaves=leaves)
                if not run:
                    break
                ids = [r.item_id for r in run]
                made += 1
                new = f"s{made}"
                depths[new] = max(depths[i] for i in ids) + 1
                leaves[new] = sum(leaves[i] for i in ids)
                start = context.index(ids[0])
                context[start : start + len(ids)] = [new]
        worst = max(worst, max(depths[s] for s in context))
        assert worst <= depth_bound(leaf), (leaf, worst)
    assert len(context) <= max(area, 3 * depth_bound(700))
