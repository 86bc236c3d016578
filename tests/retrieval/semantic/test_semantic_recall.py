"""A reduced run of ``benchmarks/bench_semantic.py``: hybrid grep against lexical grep."""

from __future__ import annotations

import statistics

import pytest
from benchmarks.bench_recall import Question, build

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.config import CompactionConfig, RetrievalConfig
from mnesis.retrieval import RetrievalEngine


async def _recall_at_5(engine: RetrievalEngine, questions: list[Question]) -> dict[str, float]:
    shares: dict[str, list[float]] = {}
    for question in questions:
        found = await engine.grep(question.text, scope="messages", limit=5)
        top = {m.id for m in found.matches}
        share = sum(e in top for e in question.evidence) / len(question.evidence)
        shares.setdefault(question.kind, []).append(share)
        shares.setdefault("all", []).append(share)
    return {kind: statistics.mean(values) for kind, values in shares.items()}


@pytest.mark.slow
async def test_hybrid_grep_beats_lexical_on_paraphrases_and_keeps_the_rest(
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
    lexical = RetrievalEngine(session.store, session.id)
    hybrid = RetrievalEngine(session.store, session.id, config=RetrievalConfig(semantic=True))
    assert await hybrid.index_semantic() > 1_000
    questions = corpus.questions[::2]
    before = await _recall_at_5(lexical, questions)
    after = await _recall_at_5(hybrid, questions)
    report = {k: (round(before[k], 2), round(after[k], 2)) for k in sorted(after)}
    assert after["paraphrase"] >= 0.9 and after["paraphrase"] >= before["paraphrase"] + 0.1, report
    # Fusion must not trade the other kinds away. Replies lose a little: the turns that
    # restate the question's topic are close to it, and RRF lifts them past a reply
    # that only the lexical context column ranks high (see docs/benchmarks.md).
    for kind in ("temporal", "toollog", "coding"):
        assert after[kind] >= before[kind] - 0.05, report
    assert after["reply"] >= before["reply"] - 0.2, report
    assert after["all"] >= max(0.85, before["all"]), report
    await session.close()
