"""Hybrid ``grep`` pages: lexical and dense ranks fused by reciprocal rank fusion.

The lexical ranking (``ranking.ranked_page``) gives its best ``DEPTH`` hits, the dense
search (``search.dense_search``) the ``DEPTH`` stored texts closest to the query.
Each hit scores ``sum(weight / (RRF_K + rank))`` over the lists that hold it, and
says which found it (``"lexical"``, ``"semantic"`` or ``"both"``). Dense hits below
``MIN_SIMILARITY`` are left out, so a query about nothing stored adds no noise.

Two corrections to plain RRF, each for what one list sees and the other cannot:

* a dense hit that stands out (its cosine ``STANDOUT`` above the ``STANDOUT_RANK``-th
  hit's) counts ``STANDOUT_WEIGHT`` times: a paraphrase that shares only a name with
  the query is far closer than the turns that merely name the person, but those are
  in both lists and plain RRF ranks anything in both lists first;
* a reply that the lexical list holds only for its question's words keeps at least
  its lexical place (``KEEP_REPLIES``): the turns restating the question's topic are
  close to the query in both lists and would push it down.

docs/retrieval.md ("Query and fusion") says what they do on the recall benchmark.
Before searching, the texts of the searched sessions that have no vector yet are
embedded for at most ``RetrievalConfig.semantic_index_seconds`` (see ``index``).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Literal

from mnesis.config import RetrievalConfig
from mnesis.errors import StoreReadOnlyError
from mnesis.models.parts import TextPart
from mnesis.retrieval.matching import TermMatcher
from mnesis.retrieval.query import ParsedQuery
from mnesis.retrieval.ranking import Ranked, SearchPool, ranked_page
from mnesis.retrieval.render import snippet
from mnesis.retrieval.semantic.index import index_pending
from mnesis.retrieval.semantic.model import load_embedder
from mnesis.retrieval.semantic.search import DenseHit, dense_search
from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.immutable import ImmutableStore
from mnesis.store.vectors import VectorKind

__all__ = ["DEPTH", "FoundBy", "HybridHit", "hybrid_page"]

FoundBy = Literal["lexical", "semantic", "both"]
DEPTH = 50
"""Hits taken from each list before fusion."""
RRF_K = 60
LEXICAL_WEIGHT = 1.0
SEMANTIC_WEIGHT = 1.0
KEEP_REPLIES = True
"""Replies found through their question keep their lexical place (see above)."""
STANDOUT = 0.15
"""Cosine margin over the ``STANDOUT_RANK``-th dense hit that makes a hit stand out."""
STANDOUT_RANK = 10
STANDOUT_WEIGHT = 2.0
MIN_SIMILARITY = 0.2
"""Cosine below which a dense hit is not a hit."""


@dataclass(slots=True)
class HybridHit:
    """A fused hit and the path(s) that found it."""

    item: Ranked
    found_by: FoundBy
    lexical_rank: int | None = None
    """1-based place in the lexical list, when that list holds the hit."""


async def hybrid_page(
    store: ImmutableStore,
    config: RetrievalConfig,
    parsed: ParsedQuery,
    query: str,
    pools: list[SearchPool],
    where: SearchFilter,
    size: int,
    state: dict[str, int],
    *,
    exclude_ids: set[str],
    include_traces: bool,
) -> tuple[list[HybridHit], dict[str, int], bool]:
    """Up to ``size`` fused hits after ``state``: the hits, the next state, whether more exist.

    Raises ``MissingDependencyError`` when the ``semantic`` extra is not installed.
    """
    offset = state.get("offset", 0)
    depth = max(DEPTH, offset + size + 1)
    lexical, _, lexical_more = await ranked_page(
        store,
        parsed,
        pools,
        where,
        depth,
        {},
        exclude_ids=exclude_ids,
        include_traces=include_traces,
    )
    dense = await _dense(store, config, query, pools, where, depth, exclude_ids)
    dense_rank: dict[tuple[str, str], float] = _dense_scores(dense)
    fused = _fuse(lexical, dense_rank)
    seen = {(f.item.hit.kind, f.item.hit.id) for f in fused}
    missing = [h for h in dense if (h.kind, h.id) not in seen]
    matcher = TermMatcher(parsed.required + parsed.optional)
    fused.extend(await _dense_only(store, missing, dense_rank, matcher, parsed.highlights))
    fused.sort(key=lambda f: -f.item.score)
    fused = _collapse(fused)
    if KEEP_REPLIES:
        fused = _keep_replies(fused)
    page = fused[offset : offset + size]
    more = lexical_more or len(fused) > offset + size
    return page, {"offset": offset + len(page)}, more


async def _dense(
    store: ImmutableStore,
    config: RetrievalConfig,
    query: str,
    pools: list[SearchPool],
    where: SearchFilter,
    depth: int,
    exclude_ids: set[str],
) -> list[DenseHit]:
    vectors = store.vectors
    if vectors is None:
        return []
    embedder = await asyncio.to_thread(load_embedder)
    sessions = (
        list(where.session_ids) if where.session_ids is not None else await store.list_session_ids()
    )
    with contextlib.suppress(StoreReadOnlyError):  # a read-only store searches what it has
        await index_pending(
            store, vectors, embedder, sessions, budget_seconds=config.semantic_index_seconds
        )
    vector = (await asyncio.to_thread(embedder.embed, [query]))[0]
    kinds: list[VectorKind] = ["message" if p == "messages" else "summary" for p in pools]
    hits = await dense_search(
        vectors,
        embedder.model_id,
        vector,
        sessions,
        kinds,
        depth,
        since=where.since,
        until=where.until,
        exclude_ids=exclude_ids,
        location=store.location,
    )
    return [h for h in hits if h.score >= MIN_SIMILARITY]


def _dense_scores(dense: list[DenseHit]) -> dict[tuple[str, str], float]:
    """Each dense hit's share of the fused score: ``SEMANTIC_WEIGHT / (RRF_K + rank)``,
    times ``STANDOUT_WEIGHT`` for a hit much closer than the rest (see ``STANDOUT``)."""
    if not dense:
        return {}
    reference = dense[min(len(dense), STANDOUT_RANK) - 1].score
    out: dict[tuple[str, str], float] = {}
    for rank, hit in enumerate(dense, 1):
        weight = SEMANTIC_WEIGHT / (RRF_K + rank)
        if hit.score - reference >= STANDOUT:
            weight *= STANDOUT_WEIGHT
        out[(hit.kind, hit.id)] = weight
    return out


def _fuse(lexical: list[Ranked], dense_score: dict[tuple[str, str], float]) -> list[HybridHit]:
    """Lexical hits with their fused score; dense-only hits come from ``_dense_only``."""
    out: list[HybridHit] = []
    for rank, item in enumerate(lexical, 1):
        score = LEXICAL_WEIGHT / (RRF_K + rank)
        other = dense_score.get((item.hit.kind, item.hit.id))
        if other is not None:
            score += other
        item.score = score
        out.append(HybridHit(item, "lexical" if other is None else "both", rank))
    return out


async def _dense_only(
    store: ImmutableStore,
    hits: list[DenseHit],
    ranks: dict[tuple[str, str], float],
    matcher: TermMatcher,
    highlights: list[str],
) -> list[HybridHit]:
    """Dense hits the lexical list lacks, as ranked hits (text read from the store), with
    the query terms their text holds (``matched_terms``)."""
    out: list[HybridHit] = []
    texts = await _texts(store, hits)
    for hit in hits:
        found = texts.get((hit.kind, hit.id))
        if found is None:
            continue
        score = ranks[(hit.kind, hit.id)]
        coverage = matcher.coverage(found.text, None)
        item = Ranked(found, coverage, score, snippet(found.text, highlights))
        out.append(HybridHit(item, "semantic"))
    return out


async def _texts(store: ImmutableStore, hits: list[DenseHit]) -> dict[tuple[str, str], SearchHit]:
    out: dict[tuple[str, str], SearchHit] = {}
    parts = {h.id: h.part_id for h in hits if h.kind == "message"}
    if parts:
        for full in await store.get_messages_by_ids(list(parts)):
            m = full.message
            for part in full.parts:
                if isinstance(part, TextPart) and part.id == parts[full.id]:
                    out[("message", m.id)] = SearchHit(
                        "message", m.id, m.session_id, part.text, m.created_at, part.id, m.role
                    )
    summary_ids = [h.id for h in hits if h.kind == "summary"]
    if summary_ids:
        for s in await store.get_summaries(summary_ids):
            out[("summary", s.id)] = SearchHit(
                "summary", s.id, s.session_id, s.content, s.created_at
            )
    return out


def _collapse(fused: list[HybridHit]) -> list[HybridHit]:
    """A dense-only hit whose snippet repeats an earlier hit's (case and spacing aside)
    collapses into it. Only exact repeats: dense hits that differ in a name ("Greta is
    on leave" / "Viktor is on leave") are different facts. Lexical hits arrive
    collapsed and are never folded into another hit."""
    leaders: dict[str, HybridHit] = {}
    out: list[HybridHit] = []
    for hit in fused:
        key = " ".join(hit.item.snippet.casefold().split())
        leader = leaders.setdefault(key, hit)
        if leader is not hit and hit.found_by == "semantic":
            leader.item.duplicates.append(hit.item.hit.id)
            continue
        out.append(hit)
    return out


def _is_reply(item: Ranked) -> bool:
    """Whether the lexical list holds ``item`` only for its previous turn's words."""
    coverage = item.coverage
    return not coverage.own and (coverage.neighbour or "").startswith("previous turn")


def _keep_replies(fused: list[HybridHit]) -> list[HybridHit]:
    """Replies the lexical list found through their question keep at least their
    lexical place: the dense list cannot tell a reply from a restatement."""
    targets = {
        id(h): min(at, h.lexical_rank - 1)
        for at, h in enumerate(fused)
        if h.lexical_rank is not None and _is_reply(h.item)
    }
    if not targets:
        return fused
    out = [h for h in fused if id(h) not in targets]
    for hit in sorted((h for h in fused if id(h) in targets), key=lambda h: targets[id(h)]):
        out.insert(min(targets[id(hit)], len(out)), hit)
    return out
