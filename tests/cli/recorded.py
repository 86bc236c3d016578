"""A compacted session recorded into a store, for the CLI tests on PostgreSQL."""

from __future__ import annotations

from mnesis import MnesisSession, StorePool, TextPart
from mnesis.llm import FakeLLM
from tests.compaction import small_window_config


async def record_compacted(db_path: str, turns: int, model: str = "fake/cli") -> tuple[str, str]:
    """Record ``turns`` turns that each name a ``module_<n>.py`` and compact once; the
    session's ID and the ID of the summary the compaction made."""
    pool = StorePool()
    try:
        session = await MnesisSession.create(
            model=model, db_path=db_path, pool=pool, llm=FakeLLM(),
            config=small_window_config(auto=False),
        )  # fmt: skip
        for turn in range(turns):
            await session.record(
                f"turn {turn}: look at module_{turn}.py",
                [TextPart(text=f"module_{turn} holds {'detail ' * 120}")],
            )
        summary_id = (await session.compact()).summary_id
        assert summary_id
        await session.close()
        return session.id, summary_id
    finally:
        await pool.close_all()
