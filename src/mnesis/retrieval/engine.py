"""``RetrievalEngine``: describe, grep and expand over any store backend.

This is what makes compaction lossless in practice: whatever a summary hides can
be found (``grep``), inspected (``describe``) and read again (``expand``), back
to the canonical messages, with tombstoned tool outputs shown in full.

Scope: an engine is bound to one session. Searches cover that session unless the
caller passes other session IDs, and an engine created with ``allowed_session_ids``
(as agent tools are) refuses every ID outside that grant.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, cast

import regex

from mnesis.config import RetrievalConfig
from mnesis.errors import (
    FileReferenceNotFoundError,
    InvalidArgumentError,
    MessageNotFoundError,
    OutOfScopeError,
)
from mnesis.models.ids import is_valid_id
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import ToolPart
from mnesis.models.render import render_message_text
from mnesis.retrieval.query import parse_query
from mnesis.retrieval.results import (
    DescribeResult,
    ExpandedMessage,
    ExpandedSummary,
    ExpandResult,
    FileDescription,
    GrepMatch,
    GrepResult,
    MessageDescription,
    SummaryDescription,
)
from mnesis.store.base import SearchFilter, SearchHit, SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.store.search_query import SearchQuery
from mnesis.store.search_text import original_text
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["RetrievalEngine"]

logger = logging.getLogger("mnesis.retrieval")

GrepMode = Literal["full_text", "regex"]
GrepScope = Literal["messages", "summaries", "both"]
_MAX_QUERY_CHARS = 10_000
_MAX_DEPTH = 64
_MAX_TOKEN_CAP = 1_000_000
_SNIPPET_CHARS = 240
_SCAN_PAGE = 500
_CONTENT_ID_LEN = 64


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


def _snippet(text: str, needles: Sequence[str], pattern: Any = None) -> str:
    body = original_text(text)
    start = -1
    if pattern is not None:
        found = pattern.search(body, timeout=0.05)
        start = found.start() if found else -1
    else:
        lowered = body.casefold()
        for needle in needles:
            pos = lowered.find(needle.casefold())
            if pos >= 0 and (start < 0 or pos < start):
                start = pos
    begin = max(0, start - _SNIPPET_CHARS // 3) if start >= 0 else 0
    piece = " ".join(body[begin : begin + _SNIPPET_CHARS].split())
    return ("…" if begin else "") + piece + ("…" if begin + _SNIPPET_CHARS < len(body) else "")


class RetrievalEngine:
    """Describe, search and expand the history of one session."""

    def __init__(
        self,
        store: ImmutableStore,
        session_id: str,
        *,
        estimator: TokenEstimator | None = None,
        config: RetrievalConfig | None = None,
        allowed_session_ids: Sequence[str] | None = None,
        allowed_summary_ids: Sequence[str] | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.estimator = estimator or TokenEstimator()
        self.config = config or RetrievalConfig()
        self._allowed_sessions = (
            None if allowed_session_ids is None else {session_id, *allowed_session_ids}
        )
        self._allowed_summaries = None if allowed_summary_ids is None else set(allowed_summary_ids)
        self._summary_grant_cache: dict[str, bool] = {}
        self.observers: list[Callable[[str, float], None]] = []
        """Called with ``("grep" | "expand", milliseconds)`` after each call (metrics)."""

    def _observe(self, operation: str, started: float) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        for observer in self.observers:
            try:
                observer(operation, elapsed)
            except Exception:
                logger.exception("retrieval observer failed")

    # -- scope --------------------------------------------------------------
    def _check_session(self, session_id: str, object_id: str) -> None:
        allowed = self._allowed_sessions or {self.session_id}
        if session_id not in allowed:
            raise OutOfScopeError(
                f"{object_id} belongs to another session; it is not in this caller's scope"
            )

    async def _check_summary_grant(self, summary_id: str) -> None:
        """Restricted engines may only reach granted summaries and what is under them."""
        if self._allowed_summaries is None:
            return
        if summary_id in self._allowed_summaries:
            return
        cached = self._summary_grant_cache.get(summary_id)
        if cached is None:
            cached = False
            frontier = [summary_id]
            seen: set[str] = set()
            while frontier and not cached:
                current = frontier.pop()
                if current in seen:
                    continue
                seen.add(current)
                for parent in await self.store.get_summaries_merging(current):
                    if parent in self._allowed_summaries:
                        cached = True
                        break
                    frontier.append(parent)
            self._summary_grant_cache[summary_id] = cached
        if not cached:
            raise OutOfScopeError(f"{summary_id} is outside the summaries granted to this call")

    def _sessions_for(
        self, session_ids: Sequence[str] | None, all_sessions: bool
    ) -> list[str] | None:
        if all_sessions:
            if self._allowed_sessions is not None:
                return sorted(self._allowed_sessions)
            return None
        if session_ids is None:
            return [self.session_id]
        if isinstance(session_ids, str) or not all(isinstance(s, str) for s in session_ids):
            raise InvalidArgumentError("session_ids must be a list of session ID strings")
        for sid in session_ids:
            if not is_valid_id(sid, "sess"):
                raise InvalidArgumentError(f"{sid!r} is not a session ID")
            if self._allowed_sessions is not None and sid not in self._allowed_sessions:
                raise OutOfScopeError(f"session {sid} was not granted to this caller")
        return list(session_ids)

    # -- describe -----------------------------------------------------------
    async def describe(self, object_id: str) -> DescribeResult:
        """Describe a summary (``sum_``), file (``file_`` or content hash) or message (``msg_``).

        Raises ``InvalidArgumentError`` for malformed IDs, a ``NotFoundError`` subclass
        for unknown ones and ``OutOfScopeError`` for IDs of other sessions.
        """
        if not isinstance(object_id, str):
            raise InvalidArgumentError(f"an ID must be a string, got {type(object_id).__name__}")
        object_id = object_id.strip()
        if is_valid_id(object_id, "sum"):
            return await self._describe_summary(object_id)
        if is_valid_id(object_id, "msg"):
            return await self._describe_message(object_id)
        if object_id.startswith("file_") or (
            len(object_id) == _CONTENT_ID_LEN and all(c in "0123456789abcdef" for c in object_id)
        ):
            ref = await self.store.get_file_reference(object_id)
            if ref is None:
                raise FileReferenceNotFoundError(object_id)
            return FileDescription(
                id=ref.file_id,
                content_id=ref.content_id,
                path=ref.path,
                file_type=ref.file_type,
                token_count=ref.token_count,
                byte_size=ref.byte_size,
                exploration_summary=ref.exploration_summary,
            )
        raise InvalidArgumentError(
            f"{object_id[:80]!r} is not a summary (sum_…), message (msg_…) or file (file_…) ID"
        )

    async def _load_summary(self, summary_id: str) -> SummaryRecord:
        record = await self.store.get_summary(summary_id)
        self._check_session(record.session_id, summary_id)
        await self._check_summary_grant(summary_id)
        return record

    async def _describe_summary(self, summary_id: str) -> SummaryDescription:
        record = await self._load_summary(summary_id)
        children = await self.store.get_summary_parent_ids(summary_id)
        in_context = any(
            item.item_id == summary_id
            for item in await self.store.get_context_items(record.session_id, item_type="summary")
        )
        return SummaryDescription(
            id=record.id,
            session_id=record.session_id,
            summary_kind=record.kind,
            depth=record.depth,
            level=record.level,
            created_at=record.created_at,
            token_count=record.token_count,
            content=record.content,
            child_summary_ids=children,
            parent_summary_ids=await self.store.get_summaries_merging(summary_id),
            source_message_count=record.source_message_count,
            span_start_message_id=record.span_start_message_id,
            span_end_message_id=record.span_end_message_id,
            direct_source_message_ids=(
                [] if children else await self.store.get_summary_source_ids(summary_id)
            ),
            file_ids=record.file_ids,
            in_context=in_context,
        )

    async def _describe_message(self, message_id: str) -> MessageDescription:
        found = await self.store.get_messages_by_ids([message_id])
        if not found:
            raise MessageNotFoundError(message_id)
        message = found[0]
        session_id = message.message.session_id
        self._check_session(session_id, message_id)
        in_context = bool(await self.store.messages_in_context(session_id, [message_id]))
        covering = (
            None
            if in_context
            else (await self.store.covering_context_summaries(session_id, [message_id]))[message_id]
        )
        preview = " ".join(render_message_text(_uncompacted(message)).split())[:300]
        return MessageDescription(
            id=message_id,
            session_id=session_id,
            role=message.role,
            created_at=message.message.created_at,
            token_estimate=message.message.token_estimate,
            is_summary=message.message.is_summary,
            part_types=[p.type for p in message.parts],
            preview=preview,
            in_context=in_context,
            covering_summary_id=covering,
            leaf_summary_ids=await self.store.get_leaf_summaries_of_message(message_id),
        )

    # -- grep ---------------------------------------------------------------
    async def grep(
        self,
        query: str,
        *,
        mode: GrepMode = "full_text",
        scope: GrepScope = "both",
        limit: int | None = None,
        summary_id: str | None = None,
        since: int | float | datetime | None = None,
        until: int | float | datetime | None = None,
        cursor: str | None = None,
        session_ids: Sequence[str] | None = None,
        all_sessions: bool = False,
    ) -> GrepResult:
        """Search stored messages and/or summaries.

        ``full_text`` ranks by BM25 over any of the query's words (stop words
        dropped), with quoted phrases required; ``regex`` scans newest first and
        stops at ``regex_timeout_seconds`` with ``timed_out=True`` and a cursor.
        """
        started = time.perf_counter()
        try:
            return await self._grep(
                query,
                mode=mode,
                scope=scope,
                limit=limit,
                summary_id=summary_id,
                since=since,
                until=until,
                cursor=cursor,
                session_ids=session_ids,
                all_sessions=all_sessions,
            )
        finally:
            self._observe("grep", started)

    async def _grep(
        self,
        query: str,
        *,
        mode: GrepMode,
        scope: GrepScope,
        limit: int | None,
        summary_id: str | None,
        since: int | float | datetime | None,
        until: int | float | datetime | None,
        cursor: str | None,
        session_ids: Sequence[str] | None,
        all_sessions: bool,
    ) -> GrepResult:
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgumentError("query must be a non-empty string")
        if len(query) > _MAX_QUERY_CHARS:
            raise InvalidArgumentError(f"query is longer than {_MAX_QUERY_CHARS} characters")
        if mode not in ("full_text", "regex"):
            raise InvalidArgumentError(f"mode must be 'full_text' or 'regex', got {mode!r}")
        if scope not in ("messages", "summaries", "both"):
            raise InvalidArgumentError(
                f"scope must be 'messages', 'summaries' or 'both', got {scope!r}"
            )
        size = self._limit(limit)
        where = SearchFilter(
            session_ids=self._sessions_for(session_ids, all_sessions),
            since=_to_ms(since, "since"),
            until=_to_ms(until, "until"),
        )
        if summary_id is not None:
            if not is_valid_id(summary_id, "sum"):
                raise InvalidArgumentError(f"{summary_id!r} is not a summary ID")
            await self._load_summary(summary_id)
            where.under_summary = summary_id
        elif self._allowed_summaries is not None:
            raise OutOfScopeError("this caller may only search under its granted summary IDs")
        state = self._decode_cursor(cursor)
        scopes: list[Literal["messages", "summaries"]] = (
            ["messages", "summaries"] if scope == "both" else [scope]
        )
        if summary_id is not None:
            scopes = ["messages"]
        if mode == "full_text":
            hits, state, truncated, timed_out = await self._fts(query, scopes, where, size, state)
            needles = parse_query(query).highlights
            pattern = None
        else:
            pattern = self._compile(query)
            hits, state, truncated, timed_out = await self._scan(
                pattern, scopes, where, size, state
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
                snippet=_snippet(h.text, needles, pattern),
                rank=h.rank,
            )
            for h in hits
        ]
        await self._annotate(matches)
        groups: dict[str, list[str]] = {}
        for match in matches:
            key = (
                "context"
                if match.in_context
                else match.covering_summary_id
                or ("summary" if match.kind == "summary" else "uncovered")
            )
            groups.setdefault(key, []).append(match.id)
        return GrepResult(
            query=query,
            mode=mode,
            scope=scope,
            matches=matches,
            groups=groups,
            next_cursor=self._encode_cursor(state) if truncated else None,
            truncated=truncated,
            timed_out=timed_out,
        )

    def _limit(self, limit: int | None) -> int:
        if limit is None:
            return self.config.grep_default_limit
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidArgumentError(f"limit must be an integer, got {limit!r}")
        if limit < 1:
            raise InvalidArgumentError(f"limit must be at least 1, got {limit}")
        return min(limit, self.config.grep_max_limit)

    @staticmethod
    def _compile(pattern: str) -> Any:
        try:
            return regex.compile(pattern, regex.MULTILINE)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            raise InvalidArgumentError(
                f"invalid regular expression {pattern[:80]!r}: {exc}"
            ) from None

    @staticmethod
    def _decode_cursor(cursor: str | None) -> dict[str, int]:
        if cursor is None:
            return {}
        try:
            data = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
            if not isinstance(data, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in data.items()
            ):
                raise ValueError("bad cursor")
            return cast(dict[str, int], data)
        except (ValueError, UnicodeEncodeError, binascii.Error, AttributeError):
            raise InvalidArgumentError("cursor is not one returned by grep") from None

    @staticmethod
    def _encode_cursor(state: dict[str, int]) -> str:
        return base64.urlsafe_b64encode(json.dumps(state).encode()).decode("ascii")

    async def _fts(
        self,
        query: str,
        scopes: list[Literal["messages", "summaries"]],
        where: SearchFilter,
        size: int,
        state: dict[str, int],
    ) -> tuple[list[SearchHit], dict[str, int], bool, bool]:
        tiers = parse_query(query).tiers
        tier = state.get("tier", 0)
        if tier >= len(tiers):
            return [], state, False, False
        offsets: dict[str, int] = {scope: state.get(scope, 0) for scope in scopes}
        out: list[SearchHit] = []
        while True:
            hits, offsets, more_here = await self._fts_tier(
                tiers[tier], scopes, where, size - len(out), offsets
            )
            out.extend(hits)
            if len(out) >= size or tier + 1 >= len(tiers):
                break
            tier += 1
            offsets = {scope: 0 for scope in scopes}
        if not more_here and tier + 1 < len(tiers):
            # This tier is exhausted: the next page starts the next one.
            tier += 1
            offsets = {scope: 0 for scope in scopes}
            more_here = True
        new_state: dict[str, int] = {"tier": tier, **offsets}
        return out, new_state, more_here, False

    async def _fts_tier(
        self,
        tier_query: SearchQuery,
        scopes: list[Literal["messages", "summaries"]],
        where: SearchFilter,
        size: int,
        offsets: dict[str, int],
    ) -> tuple[list[SearchHit], dict[str, int], bool]:
        """One page of one tier, messages and summaries merged by rank."""
        pools: dict[str, list[SearchHit]] = {}
        for scope in scopes:
            # Extra rows tell whether another page exists and absorb duplicates.
            pools[scope] = await self.store.search_text(
                query=tier_query,
                scope=scope,
                where=where,
                limit=size * 3 + 1,
                offset=offsets.get(scope, 0),
            )
        merged: list[tuple[float, str, int, SearchHit]] = []
        for pool_name, hits in pools.items():
            merged.extend((h.rank, pool_name, i, h) for i, h in enumerate(hits))
        merged.sort(key=lambda t: (t[0], t[1], t[2]))
        out: list[SearchHit] = []
        seen: set[tuple[str, str]] = set()
        consumed = dict.fromkeys(pools, 0)
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
        for pool_name, hits in pools.items():
            new_offsets[pool_name] = offsets.get(pool_name, 0) + consumed[pool_name]
            if len(hits) > consumed[pool_name]:
                more = True
        return out, new_offsets, more

    async def _scan(
        self,
        pattern: Any,
        scopes: list[Literal["messages", "summaries"]],
        where: SearchFilter,
        size: int,
        state: dict[str, int],
    ) -> tuple[list[SearchHit], dict[str, int], bool, bool]:
        deadline = time.monotonic() + self.config.regex_timeout_seconds
        out: list[SearchHit] = []
        seen: set[tuple[str, str]] = set()
        new_state = dict(state)
        timed_out = False
        more = False
        for scope in scopes:
            key_name = f"{scope}_before"
            done_name = f"{scope}_done"
            if new_state.get(done_name):
                continue
            before = new_state.get(key_name)
            while len(out) < size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = more = True
                    break
                page = await self.store.scan_text(
                    scope=scope, where=where, before_key=before, limit=_SCAN_PAGE
                )
                if not page:
                    new_state[done_name] = 1
                    break
                for hit in page:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        timed_out = more = True
                        break
                    try:
                        found = pattern.search(original_text(hit.text), timeout=remaining)
                    except TimeoutError:
                        timed_out = more = True
                        break
                    before = hit.key
                    if found is None or (hit.kind, hit.id) in seen:
                        continue
                    seen.add((hit.kind, hit.id))
                    out.append(hit)
                    if len(out) >= size:
                        more = True
                        break
                if timed_out:
                    break
                if len(page) < _SCAN_PAGE and before == page[-1].key:
                    new_state[done_name] = 1
                    break
            if before is not None:
                new_state[key_name] = before
            if timed_out or len(out) >= size:
                more = more or not new_state.get(done_name)
                break
        return out, new_state, more, timed_out

    async def _annotate(self, matches: list[GrepMatch]) -> None:
        by_session: dict[str, list[str]] = {}
        for match in matches:
            if match.kind == "message":
                by_session.setdefault(match.session_id, []).append(match.id)
        for session_id, ids in by_session.items():
            raw = await self.store.messages_in_context(session_id, ids)
            covering = await self.store.covering_context_summaries(
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
            items = await self.store.get_context_items(session_id, item_type="summary")
            live = {i.item_id for i in items}
            for match in matches:
                if match.kind == "summary" and match.id in sids:
                    match.in_context = match.id in live

    # -- expand -------------------------------------------------------------
    async def expand(
        self,
        summary_id: str,
        *,
        depth: int = 1,
        include_messages: bool = True,
        token_cap: int | None = None,
    ) -> ExpandResult:
        """Child summaries and/or source messages of a summary, breadth first.

        Depth 1 gives a condensed summary's children or a leaf's messages. Output
        is deterministic (lineage order); ``truncated`` is set when ``token_cap``
        cut it, and ``unexpanded_summary_ids`` says where to continue.
        """
        started = time.perf_counter()
        try:
            return await self._expand(
                summary_id, depth=depth, include_messages=include_messages, token_cap=token_cap
            )
        finally:
            self._observe("expand", started)

    async def _expand(
        self,
        summary_id: str,
        *,
        depth: int,
        include_messages: bool,
        token_cap: int | None,
    ) -> ExpandResult:
        if not isinstance(summary_id, str) or not is_valid_id(summary_id.strip(), "sum"):
            raise InvalidArgumentError(f"{str(summary_id)[:80]!r} is not a summary ID (sum_…)")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise InvalidArgumentError(f"depth must be an integer >= 1, got {depth!r}")
        cap = self.config.max_expand_tokens if token_cap is None else token_cap
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise InvalidArgumentError(f"token_cap must be an integer >= 1, got {token_cap!r}")
        cap = min(cap, _MAX_TOKEN_CAP)
        depth = min(depth, _MAX_DEPTH)
        root = await self._load_summary(summary_id.strip())
        result = ExpandResult(summary_id=root.id)
        frontier: list[SummaryRecord] = [root]
        for level in range(1, depth + 1):
            next_frontier: list[SummaryRecord] = []
            for node in frontier:
                if result.truncated:
                    result.unexpanded_summary_ids.append(node.id)
                    continue
                child_ids = await self.store.get_summary_parent_ids(node.id)
                if child_ids:
                    for child in await self.store.get_summaries(child_ids):
                        cost = child.token_count + MESSAGE_OVERHEAD_TOKENS
                        if result.estimated_tokens + cost > cap:
                            result.truncated = True
                            result.unexpanded_summary_ids.append(child.id)
                            continue
                        result.summaries.append(
                            ExpandedSummary(
                                id=child.id,
                                summary_kind=child.kind,
                                depth=child.depth,
                                level=child.level,
                                content=child.content,
                                token_count=child.token_count,
                                reached_at_depth=level,
                            )
                        )
                        result.estimated_tokens += cost
                        next_frontier.append(child)
                elif include_messages:
                    await self._expand_leaf(node, result, cap)
            frontier = next_frontier
        # Summaries reached at the last depth were not opened: they are the next step.
        for node in frontier:
            if node.id not in result.unexpanded_summary_ids:
                result.unexpanded_summary_ids.append(node.id)
        if len(result.messages) > 1:
            # Breadth-first reaches shallow leaves first; present messages in
            # conversation order.
            order = {
                mid: i
                for i, mid in enumerate(await self.store.get_source_message_ids_deep(root.id))
            }
            result.messages.sort(key=lambda m: order.get(m.id, len(order)))
        return result

    async def _expand_leaf(self, leaf: SummaryRecord, result: ExpandResult, cap: int) -> None:
        ids = await self.store.get_summary_source_ids(leaf.id)
        messages = await self.store.get_messages_by_ids(ids)
        for message in messages:
            text = render_message_text(_uncompacted(message))
            cost = self.estimator.estimate(text) + MESSAGE_OVERHEAD_TOKENS
            if result.estimated_tokens + cost > cap:
                result.truncated = True
                if leaf.id not in result.unexpanded_summary_ids:
                    result.unexpanded_summary_ids.append(leaf.id)
                return
            result.messages.append(
                ExpandedMessage(
                    id=message.id,
                    role=message.role,
                    created_at=message.message.created_at,
                    text=text,
                    token_count=cost,
                )
            )
            result.estimated_tokens += cost

    async def source_messages(self, summary_id: str) -> list[MessageWithParts]:
        """Exactly the canonical messages a summary covers, at any depth, in order."""
        await self._load_summary(summary_id)
        ids = await self.store.get_source_message_ids_deep(summary_id)
        return await self.store.get_messages_by_ids(ids)


def _uncompacted(message: MessageWithParts) -> MessageWithParts:
    """A copy whose tool parts show their original output (tombstones lifted)."""
    if not any(isinstance(p, ToolPart) and p.status.compacted_at for p in message.parts):
        return message
    parts = []
    for part in message.parts:
        if isinstance(part, ToolPart) and part.status.compacted_at:
            part = part.model_copy(
                update={"status": part.status.model_copy(update={"compacted_at": None})}
            )
        parts.append(part)
    return MessageWithParts.model_construct(message=message.message, parts=parts)
