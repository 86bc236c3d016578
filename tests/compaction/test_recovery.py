"""Issue 33, item 5: any compacted turn is reached in at most 2 tool calls, at any depth.

A grep hit on a compacted message names the leaf summary that covers it (as well as
the summary in context, which may sit many levels above); ``lcm_expand`` on that leaf,
or on the message ID itself, returns the original turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.errors import InvalidArgumentError
from mnesis.models.parts import TextPart
from mnesis.retrieval.tools import run_lcm_tool


async def _deep_session(tmp_path: Path) -> tuple[MnesisSession, str]:
    config = MnesisConfig(
        compaction=CompactionConfig(compaction_model="extractive", auto=False),
    )
    session = await MnesisSession.create(
        model="local/deep", db_path=str(tmp_path / "d.db"), config=config, context_limit=16_000
    )
    session.compaction_engine.condense_fan_in = 2  # a deep DAG from few leaves
    planted = ""
    for turn in range(48):
        fact = f"the staging port of service{turn} is {8000 + turn}"
        if turn == 1:
            planted = fact
        body = f"Noted: {fact}. " + "We also reviewed the deployment notes in detail. " * 40
        await session.record(f"Turn {turn}: remember {fact}.", [TextPart(text=body)])
        if turn % 3 == 2:
            await session.compact()
    return session, planted


async def test_a_compacted_turn_is_two_tool_calls_away_at_any_depth(tmp_path: Path) -> None:
    session, planted = await _deep_session(tmp_path)
    engine = session.retrieval
    found = await run_lcm_tool(engine, "lcm_grep", {"query": '"staging port of service1 "'})
    hits = [m for m in found["matches"] if m["kind"] == "message"]
    assert hits, found
    hit = hits[0]
    top = await session.store.get_summary(hit["covering_summary_id"])
    assert top.depth >= 3, "the covering summary should sit several levels up"
    assert hit["leaf_summary_id"] and hit["leaf_summary_id"] != hit["covering_summary_id"]
    leaf = await session.store.get_summary(hit["leaf_summary_id"])
    assert leaf.kind == "leaf"

    opened = await run_lcm_tool(engine, "lcm_expand", {"summary_id": hit["leaf_summary_id"]})
    assert hit["id"] in [m["id"] for m in opened["messages"]]
    assert any(planted in m["text"] for m in opened["messages"])

    by_message = await run_lcm_tool(engine, "lcm_expand", {"summary_id": hit["id"]})
    assert by_message["summary_id"] == hit["leaf_summary_id"]
    assert by_message["message_id"] == hit["id"]
    reached = [m["id"] for m in by_message["messages"]]
    assert hit["id"] in reached
    assert set(reached) <= set(await session.store.get_summary_source_ids(leaf.id))
    await session.close()


async def test_expand_of_a_message_in_context_returns_it(tmp_path: Path) -> None:
    session = await MnesisSession.create(model="fake/m", db_path=str(tmp_path / "c.db"))
    recorded = await session.record("What is the port?", "It is 8443.")
    result = await session.retrieval.expand(recorded.assistant_message_id)
    assert result.summary_id == "" and result.message_id == recorded.assistant_message_id
    assert [m.text for m in result.messages] == ["It is 8443."]
    with pytest.raises(InvalidArgumentError, match="message ID"):
        await session.retrieval.expand("nope_123")
    await session.close()
