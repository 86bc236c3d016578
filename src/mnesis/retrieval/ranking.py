"""Ranked full-text paging: query tiers, best first, messages and summaries merged.

A query's tiers (see :attr:`~mnesis.retrieval.query.ParsedQuery.tiers`) are disjoint,
so a page walks them in order. The paging state is the current tier and one offset
per searched pool (``"messages"`` / ``"summaries"``).
"""

from __future__ import annotations

from typing import Literal

from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.immutable import ImmutableStore
from mnesis.store.search_query import SearchQuery

__all__ = ["ranked_page"]

_Pool = Literal["messages", "summaries"]


async def ranked_page(
    store: ImmutableStore,
    tiers: list[SearchQuery],
    pools: list[_Pool],
    where: SearchFilter,
    size: int,
    state: dict[str, int],
) -> tuple[list[SearchHit], dict[str, int], bool]:
    """Up to ``size`` hits after ``state``: the hits, the next state, whether more exist."""
    tier = state.get("tier", 0)
    if tier >= len(tiers):
        return [], state, False
    offsets: dict[str, int] = {pool: state.get(pool, 0) for pool in pools}
    out: list[SearchHit] = []
    while True:
        hits, offsets, more_here = await _tier_page(
            store, tiers[tier], pools, where, size - len(out), offsets
        )
        out.extend(hits)
        if len(out) >= size or tier + 1 >= len(tiers):
            break
        tier += 1
        offsets = {pool: 0 for pool in pools}
    if not more_here and tier + 1 < len(tiers):
        # This tier is exhausted: the next page starts the next one.
        tier += 1
        offsets = {pool: 0 for pool in pools}
        more_here = True
    new_state: dict[str, int] = {"tier": tier, **offsets}
    return out, new_state, more_here


async def _tier_page(
    store: ImmutableStore,
    tier_query: SearchQuery,
    pools: list[_Pool],
    where: SearchFilter,
    size: int,
    offsets: dict[str, int],
) -> tuple[list[SearchHit], dict[str, int], bool]:
    """One page of one tier, messages and summaries merged by rank."""
    found: dict[str, list[SearchHit]] = {}
    for pool in pools:
        # Extra rows tell whether another page exists and absorb duplicates.
        found[pool] = await store.search_text(
            query=tier_query,
            scope=pool,
            where=where,
            limit=size * 3 + 1,
            offset=offsets.get(pool, 0),
        )
    merged: list[tuple[float, str, int, SearchHit]] = []
    for pool_name, hits in found.items():
        merged.extend((h.rank, pool_name, i, h) for i, h in enumerate(hits))
    merged.sort(key=lambda t: (t[0], t[1], t[2]))
    out: list[SearchHit] = []
    seen: set[tuple[str, str]] = set()
    consumed = dict.fromkeys(found, 0)
    for _, pool_name, index, hit in merged:
        if len(out) >= size:
            break
        consumed[pool_name] = max(consumed[pool_name], index + 1)
        key = (hit.kind, hit.id)
        if key in seen:
            continue
        seen.add(key)
        out.append(hit)
    new_offsets = dict(offsets)
    more = False
    for pool_name, hits in found.items():
        new_offsets[pool_name] = offsets.get(pool_name, 0) + consumed[pool_name]
        if len(hits) > consumed[pool_name]:
            more = True
    return out, new_offsets, more
