"""``expand``: open a summary to its child summaries and source messages, within a cap."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from mnesis.config import RetrievalConfig
from mnesis.errors import InvalidArgumentError, MessageNotFoundError, OutOfScopeError
from mnesis.models.ids import is_valid_id
from mnesis.models.message import MessageWithParts
from mnesis.retrieval.cursor import decode_cursor, encode_cursor
from mnesis.retrieval.render import full_message_text
from mnesis.retrieval.results import ExpandedMessage, ExpandedSummary, ExpandResult
from mnesis.retrieval.scope import RetrievalScope
from mnesis.store.base import SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["ExpandOptions", "expand", "expand_message", "leaf_summary_ids", "source_messages"]


class ExpandOptions(TypedDict, total=False):
    """How far ``expand`` opens a summary (its keywords; defaults: depth 1, with
    messages, ``RetrievalConfig.max_expand_tokens``)."""

    depth: int
    include_messages: bool
    token_cap: int | None


_MAX_DEPTH = 64
_MAX_TOKEN_CAP = 1_000_000


async def expand(
    store: ImmutableStore,
    scope: RetrievalScope,
    estimator: TokenEstimator,
    config: RetrievalConfig,
    summary_id: str,
    *,
    depth: int,
    include_messages: bool,
    token_cap: int | None,
    cursor: str | None = None,
) -> ExpandResult:
    """Child summaries and/or source messages of a summary, breadth first.

    Depth 1 gives a condensed summary's children or a leaf's messages. Output is
    deterministic (lineage order); ``truncated`` is set when ``token_cap`` (default
    ``config.max_expand_tokens``) cut it, ``next_cursor`` continues with the next
    page (same summary, depth and ``include_messages``; a continued page always holds
    at least one item) and ``unexpanded_summary_ids`` says which summaries were not
    opened.

    A message ID (``msg_…``) opens the leaf summary that covers it (the original turn and
    its neighbours, however deep the summary in context is): see :func:`expand_message`.
    """
    if isinstance(summary_id, str) and is_valid_id(summary_id.strip(), "msg"):
        return await expand_message(
            store,
            scope,
            estimator,
            config,
            summary_id.strip(),
            token_cap=token_cap,
            cursor=cursor,
        )
    if not isinstance(summary_id, str) or not is_valid_id(summary_id.strip(), "sum"):
        raise InvalidArgumentError(
            f"{str(summary_id)[:80]!r} is not a summary ID (sum_…) or a message ID (msg_…)"
        )
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InvalidArgumentError(f"depth must be an integer >= 1, got {depth!r}")
    cap = config.max_expand_tokens if token_cap is None else token_cap
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InvalidArgumentError(f"token_cap must be an integer >= 1, got {token_cap!r}")
    cap = min(cap, _MAX_TOKEN_CAP)
    depth = min(depth, _MAX_DEPTH)
    root = await scope.load_summary(summary_id.strip())
    page = _Page(root.id, depth, include_messages, cursor)
    result = ExpandResult(summary_id=root.id)
    frontier: list[SummaryRecord] = [root]
    for level in range(1, depth + 1):
        next_frontier: list[SummaryRecord] = []
        for node in frontier:
            if result.truncated:
                result.unexpanded_summary_ids.append(node.id)
                continue
            child_ids = await store.get_summary_parent_ids(node.id)
            if child_ids:
                for child in await store.get_summaries(child_ids):
                    if _add_summary(result, page, child, level, cap):
                        next_frontier.append(child)
            elif include_messages:
                await _expand_leaf(store, estimator, page, node, result, cap)
        frontier = next_frontier
    if result.truncated:
        result.next_cursor = page.next_cursor(len(result.summaries) + len(result.messages))
    # Summaries reached at the last depth were not opened: they are the next step.
    for node in frontier:
        if node.id not in result.unexpanded_summary_ids:
            result.unexpanded_summary_ids.append(node.id)
    if len(result.messages) > 1:
        # Breadth-first reaches shallow leaves first; present messages in
        # conversation order.
        order = {mid: i for i, mid in enumerate(await store.get_source_message_ids_deep(root.id))}
        result.messages.sort(key=lambda m: order.get(m.id, len(order)))
    return result


@dataclass
class _Page:
    """Where a page starts in the deterministic order of an expansion's items."""

    summary_id: str
    depth: int
    include_messages: bool
    cursor: str | None

    def __post_init__(self) -> None:
        problem = (
            "cursor is not a next_cursor of expand for this summary, depth and include_messages"
        )
        try:
            state = decode_cursor(self.cursor)
        except InvalidArgumentError:
            raise InvalidArgumentError(problem) from None
        if self.cursor is not None and (
            state.keys() != {"expand_offset", "expand_key"} or state["expand_key"] != self.key()
        ):
            raise InvalidArgumentError(problem)
        self.skip = state.get("expand_offset", 0)

    def key(self) -> int:
        """What ties a cursor to its summary, depth and ``include_messages``."""
        return zlib.crc32(f"{self.summary_id}:{self.depth}:{self.include_messages}".encode())

    def skipped(self) -> bool:
        """Whether the next item belongs to an earlier page (and counts it)."""
        if self.skip > 0:
            self.skip -= 1
            return True
        return False

    def fits(self, result: ExpandResult, cost: int, cap: int) -> bool:
        """Whether an item of ``cost`` goes on this page: the cap holds, except that a
        continued page always takes its first item, so paging always progresses."""
        if result.truncated:
            return False
        if result.estimated_tokens + cost <= cap:
            return True
        return self.cursor is not None and not (result.summaries or result.messages)

    def next_cursor(self, taken: int) -> str:
        """The cursor of the page after this one, which took ``taken`` items."""
        offset = decode_cursor(self.cursor).get("expand_offset", 0) + taken
        return encode_cursor({"expand_offset": offset, "expand_key": self.key()})


def _add_summary(
    result: ExpandResult, page: _Page, child: SummaryRecord, level: int, cap: int
) -> bool:
    """Add ``child`` to ``result`` unless it would pass ``cap``; say whether to open it."""
    if page.skipped():
        return True
    cost = child.token_count + MESSAGE_OVERHEAD_TOKENS
    if not page.fits(result, cost, cap):
        result.truncated = True
        result.unexpanded_summary_ids.append(child.id)
        return False
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
    return True


async def _expand_leaf(
    store: ImmutableStore,
    estimator: TokenEstimator,
    page: _Page,
    leaf: SummaryRecord,
    result: ExpandResult,
    cap: int,
) -> None:
    ids = await store.get_summary_source_ids(leaf.id)
    for message in await store.get_messages_by_ids(ids):
        if page.skipped():
            continue
        text = full_message_text(message)
        cost = estimator.estimate(text) + MESSAGE_OVERHEAD_TOKENS
        if not page.fits(result, cost, cap):
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


async def source_messages(
    store: ImmutableStore, scope: RetrievalScope, summary_id: str
) -> list[MessageWithParts]:
    """Exactly the canonical messages a summary covers, at any depth, in order."""
    await scope.load_summary(summary_id)
    ids = await store.get_source_message_ids_deep(summary_id)
    return await store.get_messages_by_ids(ids)


async def leaf_summary_ids(store: ImmutableStore, message_ids: Sequence[str]) -> dict[str, str]:
    """Message ID → the newest leaf summary that covers it directly (uncovered: left out)."""
    leaves: dict[str, str] = {}
    for message_id in dict.fromkeys(message_ids):
        found = await store.get_leaf_summaries_of_message(message_id)
        if found:
            leaves[message_id] = found[-1]
    return leaves


async def expand_message(
    store: ImmutableStore,
    scope: RetrievalScope,
    estimator: TokenEstimator,
    config: RetrievalConfig,
    message_id: str,
    *,
    token_cap: int | None,
    cursor: str | None = None,
) -> ExpandResult:
    """The messages of the leaf summary that covers ``message_id`` (depth 1, paged like
    any expansion), or the message alone if no summary covers it (it is in the context)."""
    found = await store.get_messages_by_ids([message_id])
    if not found:
        raise MessageNotFoundError(message_id)
    message = found[0]
    scope.check_session(message.message.session_id, message_id)
    leaves = await leaf_summary_ids(store, [message_id])
    if message_id in leaves:
        leaf_id = leaves[message_id]
        if cursor is None:
            # The page starts one message before the one asked for (its question).
            ids = await store.get_summary_source_ids(leaf_id)
            start = max(0, ids.index(message_id) - 1) if message_id in ids else 0
            if start:
                key = _Page(leaf_id, 1, True, None).key()
                cursor = encode_cursor({"expand_offset": start, "expand_key": key})
        result = await expand(
            store,
            scope,
            estimator,
            config,
            leaf_id,
            depth=1,
            include_messages=True,
            token_cap=token_cap,
            cursor=cursor,
        )
        result.message_id = message_id
        return result
    if scope.allowed_summaries is not None:
        raise OutOfScopeError(f"{message_id} is outside the summaries granted to this call")
    text = full_message_text(message)
    cost = estimator.estimate(text) + MESSAGE_OVERHEAD_TOKENS
    return ExpandResult(
        summary_id="",
        message_id=message_id,
        messages=[
            ExpandedMessage(
                id=message_id,
                role=message.role,
                created_at=message.message.created_at,
                text=text,
                token_count=cost,
            )
        ],
        estimated_tokens=cost,
    )
