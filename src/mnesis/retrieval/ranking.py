"""Ranked full-text paging: a bounded candidate pool, re-ranked by coverage.

The pool is chosen by relevance, never by position (issue 28): one store call
(``SearchQuery.relevance``) weighs each term by how many rows hold it (counting
stops at a cap), takes the combinations of terms best first by their weights and
gives each one's own-text matches, in conversation text and, terms near each other,
in tool output, each under a ``LIMIT``, until ``RELEVANCE_POOL`` candidates.
Summaries (and queries of quoted phrases alone) use the coordination levels' newest
matches per combination instead. The replies of the candidate turns that ask a
question join the pool (an answer seldom repeats its question's words). Python then
scores each message by graded coordination: the share of the query's terms its parts
cover, in their own text (a tool output by its best line) or, at a discount, in the
neighbour context, each term weighted by its rarity in the pool; the hit is the part
that matches best. A hit holding a quoted phrase whole (``"payload_session"``, not
``payload_session_id``; ``"src/db.py"``, not ``src/db.py.bak``) ranks above one that
only holds its words. Retrieval traces and the unanswered question are dropped,
near-identical hits of one kind collapse into one (a summary quoting a message does
not hide it); a question about the latest state prefers the newer of two statements.

The paging state is the number of (collapsed) hits already returned.
"""

from __future__ import annotations

import asyncio
import re
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
"""Candidates of the positional walk (more when paging further)."""
RELEVANCE_POOL = 32
"""Candidates of the relevance search (see ``SearchQuery.relevance``)."""
RELEVANCE_GROUP_LIMIT = 12
"""Candidates per combination of terms (and per column) of the relevance search."""
LATEST_BONUS = 0.04
"""Most a candidate gains by being the newest, when the question asks for the latest
state: the newer of two statements of the same fact ranks first."""
EXACT_BONUS = 0.15
"""What a candidate gains by holding every quoted phrase whole: more than the role,
tool and latest priors together, so the exact match of a quoted identifier or path
ranks above the longer identifiers and paths that contain it."""
_EXACT_CHARS = 100_000
"""Of a hit's text, the start searched for a quoted phrase whole."""
_EXACT_TRIES = 64
"""Occurrences of a quoted phrase looked at per hit."""
_DUPLICATES_SCANNED = 120
"""Hits scanned for the page and the near-duplicates its hits stand for."""
_GROUP_LIMIT = 20
"""Candidates per combination of terms of a coordination level."""
_QUESTIONS = 10
_ROLE_PRIOR = {"user": 0.05, "assistant": 0.0}
_TOOL_PRIOR = -0.03


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
    by_relevance = relevance and bool(optional)
    # Messages by relevance; summaries (few) and queries of quoted phrases alone by
    # the coordination levels' newest matches.
    searches = [
        store.search_text(query=query, scope=p, where=where, limit=needed)
        for p in pools
        if not (by_relevance and p == "messages")
    ]
    if by_relevance and "messages" in pools:
        relevant = SearchQuery(
            all_of=tuple(required),
            any_of=tuple(optional),
            relevance=True,
            group_limit=max(RELEVANCE_GROUP_LIMIT, offset + size + 1),
        )
        searches.append(
            store.search_text(
                query=relevant,
                scope="messages",
                where=where,
                limit=max(RELEVANCE_POOL, needed),
            )
        )
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
        latest=parsed.latest,
        exact=parsed.exact,
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
    hits: list[SearchHit],
    matcher: TermMatcher,
    highlights: list[str],
    graded: bool,
    needed: int,
    *,
    latest: bool = False,
    exact: list[str] | None = None,
) -> list[Ranked]:
    """The best ``needed`` distinct hits, each with the near-duplicates it stands for.

    A message is scored once, over the parts the pool holds: a term counts as much as
    its best part gives it, and the hit is the part holding the most of the query in
    its own text (the tool output that says ``3 failed``, not the text part beside it
    that matched only through its neighbour context)."""
    coverages = [matcher.coverage(h.text, h.context, by_line=h.tool_name is not None) for h in hits]
    weights = matcher.weights(coverages) if graded else [1.0] * len(matcher.labels)
    matcher.best_lines(coverages, weights)
    messages: dict[tuple[str, str], list[int]] = {}
    for index, hit in enumerate(hits):
        messages.setdefault((hit.kind, hit.id), []).append(index)
    merged: list[tuple[SearchHit, Coverage]] = []
    for indexes in messages.values():
        best = max(
            indexes,
            key=lambda i: (
                _own_score(coverages[i], weights, matcher.labels),
                hits[i].tool_name is None,
            ),
        )
        coverage = coverages[best]
        if len(indexes) > 1:
            coverage = _merged(coverage, [coverages[i] for i in indexes if i != best])
        matcher.score(coverage, weights)
        merged.append((hits[best], coverage))
    newest = sorted({h.created_at for h, _ in merged})
    recency = {at: i / max(1, len(newest) - 1) for i, at in enumerate(newest)}
    scored: list[Ranked] = []
    whole: set[int] = set()
    for hit, coverage in merged:
        prior = _TOOL_PRIOR if hit.tool_name else _ROLE_PRIOR.get(hit.role or "", 0.0)
        score = coverage.score + prior
        if latest:
            score += LATEST_BONUS * recency[hit.created_at]
        if exact and all(holds_whole(hit.text, phrase) for phrase in exact):
            score += EXACT_BONUS
            whole.add(id(hit))
        scored.append(Ranked(hit, coverage, score, ""))
    scored.sort(key=lambda r: (-r.score, r.hit.rank, -r.hit.created_at, r.hit.key))
    out: list[Ranked] = []
    groups: dict[str, NearDuplicates] = {}
    leaders: dict[int, Ranked] = {}
    # Near-duplicates are looked for among the best few hundred hits only.
    for index, item in enumerate(scored[: max(_DUPLICATES_SCANNED, 4 * needed)]):
        at = item.coverage.best_at
        item.snippet = snippet(item.hit.text, [] if at >= 0 else highlights, start=at)
        # Texts that differ in which query terms they hold, or in holding the quoted
        # phrases whole, are never duplicates; nor are a summary and a message.
        group = "\n".join(item.coverage.own) + ("\n=" if id(item.hit) in whole else "")
        kind = groups.setdefault(item.hit.kind, NearDuplicates())
        leader = kind.leader_of(item.snippet, index, group, new=len(out) < needed)
        if leader < 0:
            continue
        if leader != index:
            leaders[leader].duplicates.append(item.hit.id)
            continue
        leaders[index] = item
        out.append(item)
    return out


def holds_whole(text: str, phrase: str) -> bool:
    """True if ``text`` holds ``phrase`` (case aside) as a whole: not inside a longer
    identifier, word or path (``payload_session`` is not whole in ``payload_session_id``
    nor in ``test_payload_session``, ``src/db.py`` not in ``lib/src/db.py`` nor in
    ``src/db.py.bak``). Bounded: the text's start, a few occurrences."""
    if not phrase:
        return False
    # Matched in place (no lowered copy of a large tool output per candidate).
    found = re.compile(re.escape(phrase), re.IGNORECASE).finditer(text, 0, _EXACT_CHARS)
    return any(
        _boundary_before(text, m.start(), phrase) and _boundary_after(text, m.end(), phrase)
        for _, m in zip(range(_EXACT_TRIES), found, strict=False)
    )


def _joins(c: str) -> bool:
    """A character that continues an identifier or a path."""
    return c.isalnum() or c == "_"


def _boundary_before(text: str, start: int, needle: str) -> bool:
    if start == 0 or not _joins(needle[0]):
        return True
    before = text[start - 1]
    if _joins(before):
        return False
    # ``lib/src/db.py`` and ``.env.local`` continue a path before ``src/db.py``.
    return not (before in "/." and start >= 2 and _joins(text[start - 2]))


def _boundary_after(text: str, end: int, needle: str) -> bool:
    if end == len(text) or not _joins(needle[-1]):
        return True
    after = text[end]
    if _joins(after):
        return False
    # ``src/db.py.bak`` and ``src/db/x`` continue it; a full stop ends a sentence.
    return not (after in "/.-" and end + 1 < len(text) and _joins(text[end + 1]))


def _own_score(coverage: Coverage, weights: list[float], labels: list[str]) -> float:
    """What a part's own text covers (its shares without the neighbour context's)."""
    return sum(
        w * s
        for w, s, label in zip(weights, coverage.shares, labels, strict=True)
        if label in coverage.own
    )


def _merged(best: Coverage, others: list[Coverage]) -> Coverage:
    """``best`` with every term the message's other parts hold counted as they count
    it (each term at its best share); the score is set again by ``grade``."""
    shares = list(best.shares)
    own = list(best.own)
    context = list(best.context)
    for other in others:
        for index, share in enumerate(other.shares):
            shares[index] = max(shares[index], share)
        own += [t for t in other.own if t not in own]
        context += [t for t in other.context if t not in context]
    context = [t for t in context if t not in own]
    return Coverage(
        own=own,
        context=context,
        neighbour=best.neighbour or next((o.neighbour for o in others if o.neighbour), None),
        shares=shares,
        best_at=best.best_at,
    )
