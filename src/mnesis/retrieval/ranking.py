"""Ranked full-text paging: a bounded candidate pool, re-ranked by coverage.

The index does not rank here: BM25 (``ts_rank_cd``) scores every match of a query,
and on common words that is most of the history. Instead one store call walks the
coordination levels (every term, all but one, ..., any term; see
``SearchQuery.descending``) and returns, per combination of terms, its newest
matches (with its own-text and oldest matches when it has many), until the pool
holds ``POOL`` candidates. The replies of the candidate turns that ask a question
join it (an answer seldom repeats its question's words). Python then scores each
candidate by graded coordination: the share of the query's terms it covers, in its
own text or, at a discount, in its neighbour context, each term weighted by its
rarity in the pool. Retrieval traces and the unanswered question are dropped,
near-identical hits collapse into one.

The paging state is the number of (collapsed) hits already returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from mnesis.retrieval.hygiene import NearDuplicates, is_retrieval_trace
from mnesis.retrieval.matching import Coverage, TermMatcher
from mnesis.retrieval.query import ParsedQuery
from mnesis.retrieval.render import snippet
from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.immutable import ImmutableStore
from mnesis.store.search_query import SearchQuery

__all__ = ["POOL", "Ranked", "SearchPool", "ranked_page"]

SearchPool = Literal["messages", "summaries"]
"""What a search reads: the stored messages or the summaries."""
POOL = 40
"""Candidates that graded coordination re-ranks (more when paging further)."""
_GROUP_LIMIT = 20
"""Candidates per combination of terms of a coordination level."""
_QUESTIONS = 10
_ROLE_PRIOR = {"user": 0.05, "assistant": 0.0}
_TOOL_PRIOR = -0.1


@dataclass(slots=True)
class Ranked:
    """One re-ranked hit with why it matched and the near-duplicates it stands for."""

    hit: SearchHit
    coverage: Coverage
    score: float
    snippet: str
    duplicates: list[str] = field(default_factory=list)


async def ranked_page(
    store: ImmutableStore,
    parsed: ParsedQuery,
    pools: list[SearchPool],
    where: SearchFilter,
    size: int,
    state: dict[str, int],
    *,
    exclude_ids: set[str] | Callable[[], Awaitable[set[str]]],
    include_traces: bool,
    context: bool = True,
    graded: bool = True,
    relevance: bool = True,
) -> tuple[list[Ranked], dict[str, int], bool]:
    """Up to ``size`` hits after ``state``: the hits, the next state, whether more exist.

    The pools' searches run concurrently, with ``exclude_ids`` when it is a read
    still to make. ``context=False`` ignores neighbour context and ``graded=False`` keeps
    the pool's order (both only to measure what each contributes).
    """
    offset = state.get("offset", 0)
    required, optional = parsed.required, parsed.optional
    if not required and not optional:
        return [], state, False
    needed = max(POOL, offset + size + 1)
    candidates: dict[tuple[str, str], SearchHit] = {}

    query = SearchQuery(
        all_of=tuple(required),
        any_of=tuple(optional),
        include_context=context,
        newest_first=True,
        group_limit=_GROUP_LIMIT,
        descending=True,
    )
    searches = [store.search_text(query=query, scope=p, where=where, limit=needed) for p in pools]
    found, excluded = await asyncio.gather(asyncio.gather(*searches), _settled(exclude_ids))
    for hits in found:
        for hit in hits:
            candidates.setdefault((hit.kind, hit.part_id or hit.id), hit)
    matcher = TermMatcher(required + optional)
    if context and "messages" in pools and where.under_summary is None:
        for reply in (await store.replies_to(_best_questions(candidates, matcher))).values():
            if _in_time_range(reply, where):
                candidates.setdefault((reply.kind, reply.part_id or reply.id), reply)
    ranked = _rerank(
        [h for h in candidates.values() if _admissible(h, excluded, include_traces)],
        matcher,
        parsed.highlights,
        graded,
        offset + size + 1,
    )
    page = ranked[offset : offset + size]
    more = len(ranked) > offset + size
    return page, {"offset": offset + len(page)}, more


async def _settled(ids: set[str] | Callable[[], Awaitable[set[str]]]) -> set[str]:
    return ids if isinstance(ids, set) else await ids()


def _best_questions(
    candidates: dict[tuple[str, str], SearchHit], matcher: TermMatcher
) -> list[str]:
    """IDs of the ``_QUESTIONS`` candidate turns that ask a question and hold the most
    query terms: their replies join the pool (an answer seldom repeats the words)."""
    asked = [
        h for h in candidates.values() if h.kind == "message" and not h.tool_name and "?" in h.text
    ]
    asked.sort(key=lambda h: (-len(matcher.coverage(h.text, None).own), h.rank))
    return list(dict.fromkeys(h.id for h in asked))[:_QUESTIONS]


def _in_time_range(hit: SearchHit, where: SearchFilter) -> bool:
    return (where.since is None or hit.created_at >= where.since) and (
        where.until is None or hit.created_at < where.until
    )


def _admissible(hit: SearchHit, exclude_ids: set[str], include_traces: bool) -> bool:
    if hit.kind == "message" and hit.id in exclude_ids:
        return False
    return include_traces or not is_retrieval_trace(hit)


def _rerank(
    hits: list[SearchHit], matcher: TermMatcher, highlights: list[str], graded: bool, needed: int
) -> list[Ranked]:
    """The best ``needed`` distinct hits, each with the near-duplicates it stands for."""
    coverages = [matcher.coverage(hit.text, hit.context) for hit in hits]
    if graded:
        matcher.grade(coverages)
    scored: list[Ranked] = []
    for hit, coverage in zip(hits, coverages, strict=True):
        prior = _TOOL_PRIOR if hit.tool_name else _ROLE_PRIOR.get(hit.role or "", 0.0)
        score = coverage.score + prior
        scored.append(Ranked(hit, coverage, score, ""))
    scored.sort(key=lambda r: (-r.score, r.hit.rank, -r.hit.created_at, r.hit.key))
    out: list[Ranked] = []
    groups = NearDuplicates()
    leaders: dict[int, Ranked] = {}
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(scored):
        key = (item.hit.kind, item.hit.id)
        if key in seen:
            continue
        seen.add(key)
        item.snippet = snippet(item.hit.text, highlights)
        # Texts that differ in which query terms they hold are never duplicates.
        group = "\n".join(item.coverage.own)
        leader = groups.leader_of(item.snippet, index, group, new=len(out) < needed)
        if leader < 0:
            continue
        if leader != index:
            leaders[leader].duplicates.append(item.hit.id)
            continue
        leaders[index] = item
        out.append(item)
    return out
