"""``grep``: search stored messages and summaries, ranked or by regex, with cursors.

Each match says where it stands: raw in the context, or covered by which summary
in the context (the one to expand to read it again).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Sequence
from datetime import datetime
from typing import Literal

from mnesis.config import RetrievalConfig
from mnesis.errors import InvalidArgumentError, OutOfScopeError
from mnesis.models.ids import is_valid_id
from mnesis.retrieval.cursor import decode_cursor, encode_cursor
from mnesis.retrieval.expand import leaf_summary_ids
from mnesis.retrieval.hygiene import NearDuplicates, unanswered_questions
from mnesis.retrieval.query import parse_query
from mnesis.retrieval.ranking import Ranked, SearchPool, ranked_page
from mnesis.retrieval.regex_pattern import compile_pattern
from mnesis.retrieval.regex_scan import scan_page
from mnesis.retrieval.render import snippet
from mnesis.retrieval.results import HIT_FIELDS, GrepMatch, GrepResult, copied
from mnesis.retrieval.scope import RetrievalScope
from mnesis.retrieval.semantic.hybrid import FoundBy, hybrid_page
from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.immutable import ImmutableStore

__all__ = ["GrepMode", "GrepScope", "grep"]

GrepMode = Literal["full_text", "regex"]
GrepScope = Literal["messages", "summaries", "both"]
_MAX_QUERY_CHARS = 10_000


async def grep(
    store: ImmutableStore,
    scope: RetrievalScope,
    config: RetrievalConfig,
    query: str,
    *,
    mode: GrepMode,
    target: GrepScope,
    limit: int | None,
    summary_id: str | None,
    since: int | float | datetime | None,
    until: int | float | datetime | None,
    cursor: str | None,
    session_ids: Sequence[str] | None,
    all_sessions: bool,
    include_lcm_tools: bool = False,
) -> GrepResult:
    """Search stored messages and/or summaries (``target``) within ``scope``.

    ``full_text`` ranks a candidate pool by graded coordination, then BM25 (see
    ``ranking``), with quoted phrases required; with ``config.semantic`` (and no
    ``summary_id``) that ranking is fused with dense recall (``semantic.hybrid``);
    ``regex`` (a pattern within the limits of ``regex_pattern``) scans newest first and
    stops ``config.regex_timeout_seconds`` after the call began, with ``timed_out=True``
    and a cursor; its snippets are cut at the spans the scan found, never matched again.

    The ``lcm_*`` tools' own inputs and outputs are left out unless
    ``include_lcm_tools``; the unanswered newest user turn is never a hit.
    """
    started = time.monotonic()
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgumentError("query must be a non-empty string")
    if len(query) > _MAX_QUERY_CHARS:
        raise InvalidArgumentError(f"query is longer than {_MAX_QUERY_CHARS} characters")
    if mode not in ("full_text", "regex"):
        raise InvalidArgumentError(f"mode must be 'full_text' or 'regex', got {mode!r}")
    if target not in ("messages", "summaries", "both"):
        raise InvalidArgumentError(
            f"scope must be 'messages', 'summaries' or 'both', got {target!r}"
        )
    size = _limit(config, limit)
    where = SearchFilter(
        session_ids=scope.sessions_for(session_ids, all_sessions),
        since=_to_ms(since, "since"),
        until=_to_ms(until, "until"),
    )
    if summary_id is not None:
        if not is_valid_id(summary_id, "sum"):
            raise InvalidArgumentError(f"{summary_id!r} is not a summary ID")
        await scope.load_summary(summary_id)
        where.under_summary = summary_id
    elif scope.allowed_summaries is not None:
        raise OutOfScopeError("this caller may only search under its granted summary IDs")
    state = decode_cursor(cursor)
    pools: list[SearchPool] = ["messages", "summaries"] if target == "both" else [target]
    if summary_id is not None:
        pools = ["messages"]
    asking = where.session_ids if where.session_ids is not None else [scope.session_id]

    def exclude() -> Awaitable[set[str]]:
        return unanswered_questions(store, asking)

    if mode == "full_text":
        parsed = parse_query(query)
        timed_out = False
        if config.semantic and summary_id is None:
            fused, state, truncated = await hybrid_page(
                store,
                config,
                parsed,
                query,
                pools,
                where,
                size,
                state,
                exclude_ids=await exclude(),
                include_traces=include_lcm_tools,
            )
            matches = [_ranked_match(f.item, f.found_by) for f in fused]
        else:
            ranked, state, truncated = await ranked_page(
                store,
                parsed,
                pools,
                where,
                size,
                state,
                exclude_ids=exclude,
                include_traces=include_lcm_tools,
            )
            matches = [_ranked_match(r) for r in ranked]
    else:
        pattern = compile_pattern(query)
        found, state, truncated, timed_out = await scan_page(
            store,
            pattern,
            pools,
            where,
            size,
            state,
            started + config.regex_timeout_seconds,
            exclude_ids=await exclude(),
            include_traces=include_lcm_tools,
        )
        matches = _collapse(
            [_match(h, snippet(h.text, [], start=at), [text], "regex") for h, at, text in found]
        )
    await _annotate(store, matches)
    return GrepResult(
        query=query,
        mode=mode,
        scope=target,
        matches=matches,
        groups=_groups(matches),
        next_cursor=encode_cursor(state) if truncated else None,
        truncated=truncated,
        timed_out=timed_out,
    )


def _match(
    hit: SearchHit, text: str, terms: list[str], found_by: FoundBy | Literal["regex"]
) -> GrepMatch:
    return GrepMatch(
        **copied(hit, HIT_FIELDS), snippet=text, matched_terms=terms, found_by=found_by
    )


def _ranked_match(item: Ranked, found_by: FoundBy = "lexical") -> GrepMatch:
    match = _match(item.hit, item.snippet, item.coverage.own, found_by)
    match.rank = -item.score
    match.context_terms = item.coverage.context
    match.context_from = item.coverage.neighbour
    match.duplicates = len(item.duplicates)
    match.duplicate_ids = item.duplicates[:10]
    return match


def _collapse(matches: list[GrepMatch]) -> list[GrepMatch]:
    """Near-identical regex matches of one page collapse into the first."""
    groups = NearDuplicates()
    out: list[GrepMatch] = []
    leaders: dict[int, GrepMatch] = {}
    for index, match in enumerate(matches):
        leader = groups.leader_of(match.snippet, index)
        if leader != index:
            leaders[leader].duplicates += 1
            if len(leaders[leader].duplicate_ids) < 10:
                leaders[leader].duplicate_ids.append(match.id)
            continue
        leaders[index] = match
        out.append(match)
    return out


def _limit(config: RetrievalConfig, limit: int | None) -> int:
    if limit is None:
        return config.grep_default_limit
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidArgumentError(f"limit must be an integer, got {limit!r}")
    if limit < 1:
        raise InvalidArgumentError(f"limit must be at least 1, got {limit}")
    return min(limit, config.grep_max_limit)


def _to_ms(value: int | float | datetime | None, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"{name} must be Unix milliseconds or a datetime")
    if not math.isfinite(value) or not -(2**63) <= value < 2**63:
        raise InvalidArgumentError(
            f"{name} must be a finite Unix time in milliseconds, got {value!r}"
        )
    return int(value)


async def _annotate(store: ImmutableStore, matches: list[GrepMatch]) -> None:
    """Set where each match stands: in context, or the context summary covering it."""
    if not matches:
        return
    places = await store.context_places(
        [m.id for m in matches if m.kind == "message"],
        [m.id for m in matches if m.kind == "summary"],
    )
    for match in matches:
        match.in_context = match.id in places.in_context
        if match.kind == "message":
            match.covering_summary_id = places.covering.get(match.id)
    covered = [m.id for m in matches if m.kind == "message" and m.covering_summary_id]
    leaves = await leaf_summary_ids(store, covered)
    for match in matches:
        match.leaf_summary_id = leaves.get(match.id)


def _groups(matches: list[GrepMatch]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for match in matches:
        key = (
            "context"
            if match.in_context
            else match.covering_summary_id
            or ("summary" if match.kind == "summary" else "uncovered")
        )
        groups.setdefault(key, []).append(match.id)
    return groups
