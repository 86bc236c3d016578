"""A session with enough tool output to compact, for tests that need real summaries.

``EXTRACTIVE_32K`` compacts offline (the extractive summariser) in a 32k window, so
sixty turns of ``record_steps`` end with summaries in the context after ``compact``.
"""

from __future__ import annotations

from collections.abc import Callable

from mnesis import MnesisConfig, MnesisSession, TextPart, ToolPart
from mnesis.config import CompactionConfig

__all__ = ["EXTRACTIVE_32K", "compact_now", "record_steps"]

EXTRACTIVE_32K = MnesisConfig(
    model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
    compaction=CompactionConfig(
        compaction_output_budget=4_000,
        compaction_model="extractive",
        prune_protect_tokens=4_000,
        prune_minimum_tokens=2_000,
    ),
)


def _build_step(i: int) -> str:
    return f"step {i}: the build number is {1000 + i}"


def _migration_step(i: int) -> str:
    return f"running step {i} of the migration plan"


async def record_steps(
    session: MnesisSession,
    steps: range,
    *,
    user: Callable[[int], str] = _build_step,
    reply: Callable[[int], str] = _migration_step,
    output: str = "ok line\n" * 300,
) -> None:
    """One recorded turn per step: ``user(i)``, then ``reply(i)`` with a ``bash`` call
    (``c<i>``) that printed ``output``."""
    for i in steps:
        await session.record(
            user(i),
            [
                TextPart(text=reply(i)),
                ToolPart(tool_name="bash", tool_call_id=f"c{i}", output=output),
            ],
        )


async def compact_now(session: MnesisSession) -> None:
    """Let a background compaction finish, then compact once more."""
    await session.compaction_engine.wait_for_pending()
    await session.compact()
