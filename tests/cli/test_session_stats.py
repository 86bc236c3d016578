"""``session_stats`` (what ``mnesis sessions`` and ``mnesis stats`` print) on both
backends: the database's aggregates equal the counts made by reading every row."""

from __future__ import annotations

from collections import Counter
from typing import Any

from mnesis import MnesisSession, StorePool, TextPart
from mnesis.llm import FakeLLM
from mnesis.models.parts import ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.store import ImmutableStore
from mnesis.store.session_stats import SessionStats
from tests.backends import backend, db_path, migrated_pg_template
from tests.compaction import small_window_config

__all__ = ["backend", "db_path", "migrated_pg_template"]


async def _read_every_row(store: ImmutableStore, session_id: str) -> dict[str, Any]:
    """The counts, the slow way: every message, part and summary read back."""
    snapshot = await store.integrity_snapshot(session_id)
    messages = await store.get_messages(session_id)
    summaries = await store.get_summaries([s[0] for s in snapshot.summaries])
    tools = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
    return {
        "messages": sum(1 for m in snapshot.messages if not m[3]),
        "compactions": sum(1 for m in snapshot.messages if m[3]),
        "turns": sum(1 for m in snapshot.messages if m[2] == "user" and not m[3]),
        "parts": sum(len(m.parts) for m in messages),
        "tool_calls": len(tools),
        "pruned_tool_outputs": sum(1 for t in tools if t.status.compacted_at is not None),
        "message_tokens": sum(m[4] for m in snapshot.messages if not m[3]),
        "context_tokens": await store.context_token_total(session_id),
        "model_tokens": (await store.session_token_usage(session_id)).total,
        "last_message_at": messages[-1].message.created_at if messages else None,
        "summaries_by_kind": dict(Counter(s.kind for s in summaries)),
        "summaries_by_level": dict(Counter(s.level for s in summaries)),
        "summaries_by_depth": dict(Counter(s.depth for s in summaries)),
    }


def _as_dict(stats: SessionStats) -> dict[str, Any]:
    fields = (
        "messages compactions turns parts tool_calls pruned_tool_outputs message_tokens "
        "context_tokens model_tokens last_message_at summaries_by_kind summaries_by_level "
        "summaries_by_depth"
    ).split()
    return {name: getattr(stats, name) for name in fields}


async def _session(pool: StorePool, db_path: str, turns: int, *, compact: bool) -> MnesisSession:
    session = await MnesisSession.create(
        model="fake/stats", db_path=db_path, pool=pool, llm=FakeLLM(),
        config=small_window_config(auto=False),
    )  # fmt: skip
    for turn in range(turns):
        tool = ToolPart(
            tool_name="Bash",
            tool_call_id=f"call_{turn}",
            input={"command": f"make m{turn}"},
            output=f"built {'line ' * 200}",
            status=ToolStatus(state="completed"),
        )
        await session.record(
            f"turn {turn}: build module_{turn}",
            [TextPart(text=f"module_{turn} {'detail ' * 100}"), tool],
            tokens=TokenUsage(input=1_000 + turn, output=50),
        )
    if compact:
        assert (await session.compact()).summary_id
    return session


async def test_the_aggregates_equal_the_counts_of_every_row(db_path: str) -> None:
    pool = StorePool()
    try:
        big = await _session(pool, db_path, 30, compact=True)
        small = await _session(pool, db_path, 2, compact=False)
        empty = await MnesisSession.create(model="fake/empty", db_path=db_path, pool=pool)
        store = big.store
        message = (await store.get_messages(small.id))[1]
        (tool,) = message.tool_parts
        assert tool.id is not None
        await store.tombstone_parts([(tool.id, 1_700_000_000_000, 5)], [(message.message.id, 9)])
        every = await store.session_stats(None)
        chosen = await store.session_stats([small.id, empty.id, "sess_unknown"])
        for session in (big, small, empty):
            expected = await _read_every_row(store, session.id)
            assert _as_dict(every[session.id]) == expected
        assert sorted(every) == sorted([big.id, small.id, empty.id])
        assert _as_dict(chosen[small.id]) == _as_dict(every[small.id])
        assert chosen["sess_unknown"] == SessionStats("sess_unknown")
        assert every[big.id].compactions >= 1 and every[big.id].summaries >= 1
        assert every[small.id].pruned_tool_outputs == 1
        assert every[empty.id].last_message_at is None
    finally:
        await pool.close_all()
