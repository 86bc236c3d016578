"""``grep``: search stored messages and summaries, ranked or by regex, with cursors.

Each match says where it stands: raw in the context, or covered by which summary
in the context (the one to expand to read it again).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from mnesis.config import RetrievalConfig
from mnesis.errors import InvalidArgumentError, OutOfScopeError
from mnesis.models.ids import is_valid_id
from mnesis.retrieval.cursor import decode_cursor, encode_cursor
from mnesis.retrieval.query import parse_query
from mnesis.retrieval.ranking import ranked_page
from mnesis.retrieval.regex_scan import compile_pattern, scan_page
from mnesis.retrieval.render import snippet
from mnesis.retrieval.results import GrepMatch, GrepResult
from mnesis.retrieval.scope import RetrievalScope
from mnesis.store.base import SearchFilter
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
) -> GrepResult:
    """Search stored messages and/or summaries (``target``) within ``scope``.

    ``full_text`` ranks by BM25 over any of the query's words (stop words dropped),
    with quoted phrases required; ``regex`` scans newest first and stops at
    ``config.regex_timeout_seconds`` with ``timed_out=True`` and a cursor.
    """
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
    pools: list[Literal["messages", "summaries"]] = (
        ["messages", "summaries"] if target == "both" else [target]
    )
    if summary_id is not None:
        pools = ["messages"]
    if mode == "full_text":
        parsed = parse_query(query)
        hits, state, truncated = await ranked_page(store, parsed.tiers, pools, where, size, state)
        timed_out = False
        needles = parsed.highlights
        pattern = None
    else:
        pattern = compile_pattern(query)
        hits, state, truncated, timed_out = await scan_page(
            store, pattern, pools, where, size, state, config.regex_timeout_seconds
        )
        needles = []
    matches = [
        GrepMatch(
            kind=h.kind,
            id=h.id,
            session_id=h.session_id,
            part_id=h.part_id,
            role=h.role,
            created_at=h.created_at,
            snippet=snippet(h.text, needles, pattern),
            rank=h.rank,
        )
        for h in hits
    ]
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
    by_session: dict[str, list[str]] = {}
    for match in matches:
        if match.kind == "message":
            by_session.setdefault(match.session_id, []).append(match.id)
    for session_id, ids in by_session.items():
        raw = await store.messages_in_context(session_id, ids)
        covering = await store.covering_context_summaries(
            session_id, [i for i in ids if i not in raw]
        )
        for match in matches:
            if match.kind == "message" and match.session_id == session_id:
                match.in_context = match.id in raw
                match.covering_summary_id = covering.get(match.id)
    summary_sessions: dict[str, set[str]] = {}
    for match in matches:
        if match.kind == "summary":
            summary_sessions.setdefault(match.session_id, set()).add(match.id)
    for session_id, sids in summary_sessions.items():
        items = await store.get_context_items(session_id, item_type="summary")
        live = {i.item_id for i in items}
        for match in matches:
            if match.kind == "summary" and match.id in sids:
                match.in_context = match.id in live


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
