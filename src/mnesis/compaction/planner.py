"""Span planning: which context items a compaction round replaces. Pure functions, no store.

A leaf span is a run of raw messages before the protected fresh tail (and
before the next summary); a condense run is a run of consecutive summaries.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.compaction.candidates import INPUT_WINDOW_SHARE
from mnesis.store.base import ContextItem

__all__ = [
    "DRAIN_FRACTION",
    "LEAF_CHUNK_TOKENS",
    "MAX_CONDENSE_CHILDREN",
    "condense_run",
    "drain_target",
    "leaf_span",
    "leaf_span_tokens",
    "plan_leaf_span",
    "tail_start",
]

DRAIN_FRACTION = 0.5
"""A run stops once the context is below this share of the soft threshold."""
LEAF_CHUNK_TOKENS = 12_000
"""The smallest span a leaf pass asks for (unless the input window is smaller)."""
MAX_CONDENSE_CHILDREN = 8
_NO_TAIL = 1 << 62


def drain_target(usable: int, soft_threshold_fraction: float) -> int:
    """Context size (tokens) a run compacts down to."""
    return int(usable * soft_threshold_fraction * DRAIN_FRACTION)


def tail_start(items: Sequence[ContextItem], fresh_tail_count: int) -> int:
    """First position of the protected fresh tail.

    The tail starts at the second-to-last user message (the last exchange stays
    whole), or earlier so that it holds the last ``fresh_tail_count`` messages.
    """
    messages = [i for i in items if i.item_type == "message"]
    if not messages:
        return _NO_TAIL
    users = [i.position for i in messages if i.role == "user"]
    start = users[-2] if len(users) >= 2 else (users[0] if users else messages[0].position)
    if fresh_tail_count:
        start = min(start, messages[max(0, len(messages) - fresh_tail_count)].position)
    return start


def leaf_span_tokens(excess: int, rounds_left: int, input_window: int) -> int:
    """How many tokens a leaf span should cover.

    The excess over the drain target, spread over the rounds left, but at least
    :data:`LEAF_CHUNK_TOKENS` and at most the summariser's input share of its window.
    """
    input_cap = int(input_window * INPUT_WINDOW_SHARE)
    share = -(-max(excess, 0) // max(1, rounds_left))
    return min(input_cap, max(LEAF_CHUNK_TOKENS, share))


def leaf_span(
    items: Sequence[ContextItem], want_tokens: int, fresh_tail_count: int
) -> list[ContextItem]:
    """The first run of raw messages before the tail, up to about ``want_tokens``.

    Summaries before the run are skipped; a summary after it ends it. A tool
    result is never split from the messages before it, even past ``want_tokens``.
    """
    tail = tail_start(items, fresh_tail_count)
    span: list[ContextItem] = []
    used = 0
    for item in items:
        if item.position >= tail:
            break
        if item.item_type == "summary":
            if span:
                break
            continue
        if span and used + item.tokens > want_tokens and item.role != "tool":
            break
        span.append(item)
        used += item.tokens
    return span


def plan_leaf_span(
    items: Sequence[ContextItem],
    *,
    excess: int,
    rounds_left: int,
    input_window: int,
    fresh_tail_count: int,
    leaf_target_tokens: int,
) -> list[ContextItem]:
    """The leaf span of this round, or ``[]`` if none is worth summarising.

    A span no larger than 1.2 x the leaf target is not worth a summary.
    """
    want = leaf_span_tokens(excess, rounds_left, input_window)
    span = leaf_span(items, want, fresh_tail_count)
    if not span or sum(i.tokens for i in span) <= leaf_target_tokens * 1.2:
        return []
    return span


def condense_run(
    items: Sequence[ContextItem], max_children: int = MAX_CONDENSE_CHILDREN
) -> list[ContextItem]:
    """The first run of at least two consecutive summaries (at most ``max_children``), or ``[]``."""
    run: list[ContextItem] = []
    for item in items:
        if item.item_type == "summary":
            run.append(item)
            if len(run) >= max_children:
                break
        elif len(run) >= 2:
            break
        else:
            run = []
    return run if len(run) >= 2 else []
