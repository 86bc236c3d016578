"""A reduced run of ``benchmarks/bench_semantic.py``: hybrid grep against lexical grep."""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from benchmarks.bench_recall import FILLER, NAMES, SERVICES, TOPICS, Question, build

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.config import CompactionConfig, RetrievalConfig
from mnesis.retrieval import RetrievalEngine
from mnesis.retrieval.semantic.model import Embedder


@pytest.fixture(scope="module", autouse=True)
def embed_each_text_once() -> Iterator[None]:
    """Both backends index the same corpus and ask the same questions: the model runs
    once per distinct text in this module (it is deterministic, ~10 s of CPU for the
    corpus) and the second backend stores and searches the very same vectors. Each
    backend still embeds through the index pass, stores, and ranks on its own."""
    vectors: dict[str, Any] = {}
    embed = Embedder.embed

    def embed_once(self: Embedder, texts: Sequence[str]) -> Any:
        new = list(dict.fromkeys(t for t in texts if t not in vectors))
        if new:
            vectors.update(zip(new, embed(self, new), strict=True))
        return np.stack([vectors[t] for t in texts]) if texts else embed(self, texts)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Embedder, "embed", embed_once)
        yield


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
    assert after["paraphrase"] >= max(0.9, before["paraphrase"]), report
    # Fusion must not trade the other kinds away. Replies lost 0.14 under plain RRF
    # (the turns restating the question's topic outranked them); a reply found through
    # its question now keeps its lexical place (see docs/retrieval.md, "Query and fusion").
    for kind in ("temporal", "toollog", "coding", "reply"):
        assert after[kind] >= before[kind] - 0.05, report
    assert after["all"] >= 0.85 and after["all"] >= before["all"] - 0.02, report
    await session.close()


ONLY_THE_NAME = [
    ("{n}'s kids start at the Riverside school in September", "where will {n}'s children study"),
    ("{n} adopted a puppy last weekend", "what pet does {n} have now"),
    ("{n} is moving to Lisbon next spring", "which city is {n} relocating to"),
    ("{n} broke a wrist while cycling", "how did {n} get injured"),
    ("{n} is allergic to peanuts", "what food can {n} not eat"),
    ("{n} bought a used Volvo estate", "what car did {n} purchase"),
    ("{n} finished the Berlin marathon in under four hours", "what race did {n} run"),
    ("{n} will be on parental leave from March", "when does {n}'s time off for the baby start"),
]
"""Facts and questions that share no word but the person's name."""


async def test_hybrid_grep_beats_lexical_when_a_paraphrase_shares_only_a_name(
    db_path: str, pool: StorePool
) -> None:
    """Each fact's person is named in twelve other turns, ten of them newer: a question
    that shares only the name with its evidence is a guess for the lexical ranking, not
    for the dense one."""
    session = await MnesisSession.create(
        model="fake/m",
        db_path=db_path,
        pool=pool,
        config=MnesisConfig(compaction=CompactionConfig(auto=False)),
    )
    questions: list[Question] = []
    for index, (fact, question) in enumerate(ONLY_THE_NAME):
        name = NAMES[index]
        for turn in range(12):
            if turn == 2:
                recorded = await session.record(fact.format(n=name), "Noted, thanks.")
            filler = FILLER[turn % 10]
            text = filler.format(n=name, s=SERVICES[turn], t=TOPICS[turn % len(TOPICS)][0])
            await session.record(text if name in text else f"{name}: {text}", "ok")
        evidence = [recorded.user_message_id]
        questions.append(Question("paraphrase", question.format(n=name), evidence))
    lexical = RetrievalEngine(session.store, session.id)
    hybrid = RetrievalEngine(session.store, session.id, config=RetrievalConfig(semantic=True))
    await hybrid.index_semantic()
    before = await _recall_at_5(lexical, questions)
    after = await _recall_at_5(hybrid, questions)
    assert after["all"] >= 0.75 and after["all"] >= before["all"] + 0.4, (before, after)
    await session.close()
