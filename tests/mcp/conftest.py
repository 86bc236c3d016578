"""A database with a compacted session (agent ``alpha``) and a small one (``beta``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnesis import MnesisSession, StorePool
from tests.compacted import EXTRACTIVE_32K, compact_now, record_steps


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
        model="fake/m", agent="alpha", db_path=db_path, pool=pool, config=EXTRACTIVE_32K
    )
    first = await alpha.record("step 0: deploy the billing service", "ok")
    await record_steps(alpha, range(1, 60))
    await compact_now(alpha)
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
