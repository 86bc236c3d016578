"""The two corrections of hybrid fusion to plain RRF, on hand-made ranked lists."""

from __future__ import annotations

from mnesis.retrieval.matching import Coverage
from mnesis.retrieval.ranking import Ranked
from mnesis.retrieval.semantic.hybrid import (
    RRF_K,
    SEMANTIC_WEIGHT,
    STANDOUT_WEIGHT,
    FoundBy,
    HybridHit,
    _dense_scores,
    _keep_replies,
)
from mnesis.retrieval.semantic.search import DenseHit
from mnesis.store.base import SearchHit


def _dense(scores: list[float]) -> list[DenseHit]:
    return [DenseHit("message", f"msg_{i}", "sess", s, None) for i, s in enumerate(scores)]


def test_a_dense_hit_far_closer_than_the_rest_counts_twice() -> None:
    hits = _dense([0.70, 0.56, 0.55] + [0.50] * 9)
    weights = _dense_scores(hits)
    assert weights[("message", "msg_0")] == STANDOUT_WEIGHT * SEMANTIC_WEIGHT / (RRF_K + 1)
    assert weights[("message", "msg_1")] == SEMANTIC_WEIGHT / (RRF_K + 2)


def test_close_dense_hits_are_plain_rrf() -> None:
    hits = _dense([0.88, 0.88, 0.82] + [0.77] * 9)
    weights = _dense_scores(hits)
    assert weights == {
        ("message", h.id): SEMANTIC_WEIGHT / (RRF_K + rank) for rank, h in enumerate(hits, 1)
    }


def _fused(name: str, found_by: FoundBy, lexical_rank: int | None, coverage: Coverage) -> HybridHit:
    hit = SearchHit(kind="message", id=name, session_id="sess", text=name, created_at=0)
    return HybridHit(Ranked(hit, coverage, 0.0, name), found_by, lexical_rank)


def test_a_reply_found_through_its_question_keeps_its_lexical_place() -> None:
    topic = Coverage(own=["cache", "eviction"])
    reply = Coverage(context=["cache", "eviction"], neighbour="previous turn (user)")
    fused = [
        _fused("restated", "both", 1, topic),
        _fused("restated again", "both", 2, topic),
        _fused("dense only", "semantic", None, Coverage()),
        _fused("question", "lexical", 4, topic),
        _fused("the reply", "lexical", 3, reply),
    ]
    order = [h.item.hit.id for h in _keep_replies(fused)]
    assert order == ["restated", "restated again", "the reply", "dense only", "question"]


def test_a_turn_with_its_own_words_is_not_pinned() -> None:
    own = Coverage(own=["cache"], context=["eviction"], neighbour="previous turn (user)")
    fused = [
        _fused("first", "both", 2, own),
        _fused("second", "semantic", None, Coverage()),
        _fused("third", "lexical", 1, own),
    ]
    assert _keep_replies(fused) == fused
