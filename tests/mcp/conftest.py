"""A database with a compacted session (agent ``alpha``) and a small one (``beta``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool, TextPart, ToolPart
from mnesis.config import CompactionConfig

CONFIG = MnesisConfig(
    model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
    compaction=CompactionConfig(
        compaction_output_budget=4_000,
        compaction_model="extractive",
        prune_protect_tokens=4_000,
        prune_minimum_tokens=2_000,
    ),
)


@dataclass(frozen=True)
class Stored:
    db_path: str
    alpha: str
    """The compacted session (agent ``alpha``), created first."""
    beta: str
    """A small session of agent ``beta``, the newest."""
    fact_message_id: str
    """In ``beta``: "We moved the API to port 8443."."""
    alpha_message_id: str
    leaf_id: str
    """A leaf summary of ``alpha`` whose messages do not fit a small token cap."""
    condensed_or_leaf_id: str
    """The deepest summary in ``alpha``'s context."""


async def _build(db_path: str) -> Stored:
    pool = StorePool()
    alpha = await MnesisSession.create(
        model="fake/m", agent="alpha", db_path=db_path, pool=pool, config=CONFIG
    )
    first = await alpha.record("step 0: deploy the billing service", "ok")
    for i in range(1, 60):
        await alpha.record(
            f"step {i}: the build number is {1000 + i}",
            [
                TextPart(text=f"running step {i} of the migration plan"),
                ToolPart(tool_name="bash", tool_call_id=f"c{i}", output="ok line\n" * 300),
            ],
        )
    await alpha.compaction_engine.wait_for_pending()
    await alpha.compact()
    store = alpha.store
    items = await store.get_context_items(alpha.id, item_type="summary")
    summaries = await store.get_summaries([i.item_id for i in items])
    deepest = max(summaries, key=lambda s: s.depth)
    leaves = [s for s in summaries if s.kind == "leaf"]
    if not leaves:
        leaf_ids = await store.get_summary_parent_ids(deepest.id)
        leaves = [s for s in await store.get_summaries(leaf_ids) if s.kind == "leaf"]
    leaf = max(leaves, key=lambda s: len(s.content))
    await alpha.close()
    beta = await MnesisSession.create(model="fake/m", agent="beta", db_path=db_path, pool=pool)
    fact = await beta.record("We moved the API to port 8443.", "Noted.")
    await beta.record("unrelated chatter", "ok")
    await beta.close()
    await pool.close_all()
    return Stored(
        db_path=db_path,
        alpha=alpha.id,
        beta=beta.id,
        fact_message_id=fact.user_message_id,
        alpha_message_id=first.user_message_id,
        leaf_id=leaf.id,
        condensed_or_leaf_id=deepest.id,
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    """Built once per module (compaction takes a few seconds); tests only read it."""
    path = Path(tmp_path_factory.mktemp("mcp")) / "mnesis.db"
    return asyncio.run(_build(str(path)))
