"""``expand``: open a summary to its child summaries and source messages, within a cap."""

from __future__ import annotations

from mnesis.config import RetrievalConfig
from mnesis.errors import InvalidArgumentError
from mnesis.models.ids import is_valid_id
from mnesis.models.message import MessageWithParts
from mnesis.retrieval.render import full_message_text
from mnesis.retrieval.results import ExpandedMessage, ExpandedSummary, ExpandResult
from mnesis.retrieval.scope import RetrievalScope
from mnesis.store.base import SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["expand", "source_messages"]

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
) -> ExpandResult:
    """Child summaries and/or source messages of a summary, breadth first.

    Depth 1 gives a condensed summary's children or a leaf's messages. Output is
    deterministic (lineage order); ``truncated`` is set when ``token_cap`` (default
    ``config.max_expand_tokens``) cut it, and ``unexpanded_summary_ids`` says where
    to continue.
    """
    if not isinstance(summary_id, str) or not is_valid_id(summary_id.strip(), "sum"):
        raise InvalidArgumentError(f"{str(summary_id)[:80]!r} is not a summary ID (sum_…)")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InvalidArgumentError(f"depth must be an integer >= 1, got {depth!r}")
    cap = config.max_expand_tokens if token_cap is None else token_cap
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InvalidArgumentError(f"token_cap must be an integer >= 1, got {token_cap!r}")
    cap = min(cap, _MAX_TOKEN_CAP)
    depth = min(depth, _MAX_DEPTH)
    root = await scope.load_summary(summary_id.strip())
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
                    if _add_summary(result, child, level, cap):
                        next_frontier.append(child)
            elif include_messages:
                await _expand_leaf(store, estimator, node, result, cap)
        frontier = next_frontier
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


def _add_summary(result: ExpandResult, child: SummaryRecord, level: int, cap: int) -> bool:
    """Add ``child`` to ``result`` unless it would pass ``cap``; say whether it was added."""
    cost = child.token_count + MESSAGE_OVERHEAD_TOKENS
    if result.estimated_tokens + cost > cap:
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
    leaf: SummaryRecord,
    result: ExpandResult,
    cap: int,
) -> None:
    ids = await store.get_summary_source_ids(leaf.id)
    for message in await store.get_messages_by_ids(ids):
        text = full_message_text(message)
        cost = estimator.estimate(text) + MESSAGE_OVERHEAD_TOKENS
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


async def source_messages(
    store: ImmutableStore, scope: RetrievalScope, summary_id: str
) -> list[MessageWithParts]:
    """Exactly the canonical messages a summary covers, at any depth, in order."""
    await scope.load_summary(summary_id)
    ids = await store.get_source_message_ids_deep(summary_id)
    return await store.get_messages_by_ids(ids)
