"""A reduced run of ``benchmarks/bench_recall.py`` and the demo's ``port 8443`` check, on
both backends (the same candidate pool and re-ranker)."""

from __future__ import annotations

import json
import statistics

import pytest
from benchmarks.bench_recall import build

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.cli.demo._config import DEMO_MODEL, SYSTEM_PROMPT, demo_config
from mnesis.config import CompactionConfig
from mnesis.retrieval import RetrievalEngine
from mnesis.retrieval.tools import execute_lcm_tool
from mnesis.testing import DEMO
from mnesis.testing.conversations import iter_turns


async def test_conversational_recall_at_5_on_a_reduced_benchmark(
    db_path: str, pool: StorePool
) -> None:
    session = await MnesisSession.create(
        model="fake/m",
        db_path=db_path,
        pool=pool,
        config=MnesisConfig(compaction=CompactionConfig(auto=False)),
    )
    corpus = build(session.id, 1_500)
    await session.store.append_messages(corpus.messages)
    shares: dict[str, list[float]] = {}
    for question in corpus.questions[::2]:
        found = await session.grep(question.text, scope="messages", limit=5)
        top = {m.id for m in found.matches}
        share = sum(e in top for e in question.evidence) / len(question.evidence)
        shares.setdefault(question.kind, []).append(share)
    overall = statistics.mean(s for kind in shares.values() for s in kind)
    assert overall >= 0.8, {k: round(statistics.mean(v), 2) for k, v in shares.items()}
    assert statistics.mean(shares["reply"]) >= 0.8
    assert statistics.mean(shares["toollog"]) >= 0.9
    await session.close()


@pytest.mark.slow
async def test_lcm_grep_port_8443_on_the_demo_returns_the_instruction_first(
    db_path: str, pool: StorePool
) -> None:
    session = await MnesisSession.create(
        model=DEMO_MODEL, config=demo_config(db_path), pool=pool, system_prompt=SYSTEM_PROMPT
    )
    for turn in iter_turns(DEMO):
        if turn.is_chat:
            await session.send(turn.user_text)
        else:
            await session.record(turn.user_text, list(turn.assistant))
        await session.compaction_engine.wait_for_pending()
    engine = RetrievalEngine(session.store, session.id)
    found = json.loads(await execute_lcm_tool(engine, "lcm_grep", {"query": "port 8443"}))
    first = found["matches"][0]
    assert first["role"] == "user"
    assert "listen on port 8443" in first["snippet"]
    snippets = [m["snippet"] for m in found["matches"]]
    assert len(snippets) == len(set(snippets))
    assert any(m["duplicates"] for m in found["matches"])
    await session.close()
