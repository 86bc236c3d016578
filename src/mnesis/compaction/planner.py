"""Span planning: which context items a compaction round replaces. Pure functions, no store.

A leaf span is a run of raw messages before the protected fresh tail (and
before the next summary); a condense run is a run of consecutive summaries.

Condensation is depth-aware: :func:`plan_condense` merges :data:`CONDENSE_FAN_IN`
adjacent summaries *of the same depth* into one of the next depth, like carrying
in a base-``CONDENSE_FAN_IN`` counter. A summary of depth ``d`` then covers about
``CONDENSE_FAN_IN ** d`` leaves, the DAG's depth grows with the logarithm of the
history (not linearly: the oldest facts are not re-summarised at every pass), and
the context holds at most ``CONDENSE_FAN_IN - 1`` summaries per depth, oldest and
deepest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnesis.compaction.candidates import INPUT_WINDOW_SHARE
from mnesis.models.window import WindowSettings
from mnesis.store.base import ContextItem

__all__ = [
    "CONDENSE_FAN_IN",
    "DRAIN_FRACTION",
    "LEAF_CHUNK_TOKENS",
    "MAX_CONDENSE_CHILDREN",
    "condense_run",
    "drain_target",
    "leaf_span",
    "leaf_span_tokens",
    "plan_condense",
    "plan_leaf_span",
    "same_depth_groups",
    "tail_start",
]

DRAIN_FRACTION = 0.5
"""A run stops once the context is below this share of the soft threshold."""
LEAF_CHUNK_TOKENS = 12_000
"""The smallest span a leaf pass asks for (unless the input window is smaller)."""
MAX_CONDENSE_CHILDREN = 8
"""The most summaries :func:`condense_run` merges at once."""
CONDENSE_FAN_IN = 4
"""How many same-depth summaries one condensed summary merges.

Four keeps the DAG shallow (depth about log4 of the leaves: 3 levels for 64 leaves,
5 for 1,024) while the context shows few summaries (at most three per depth), and
each merge reads a small input (four summaries), so nothing is squeezed hard at once.
"""
_NO_TAIL = 1 << 62


def drain_target(usable: int, soft_threshold_fraction: float) -> int:
    """Context size (tokens) a run compacts down to."""
    return int(usable * soft_threshold_fraction * DRAIN_FRACTION)


def tail_start(
    items: Sequence[ContextItem], fresh_tail_count: int, max_tokens: int | None = None
) -> int:
    """First position of the protected fresh tail.

    The tail starts at the second-to-last user message (the last exchange stays
    whole), or earlier so that it holds the last ``fresh_tail_count`` messages. With
    ``max_tokens``, a tail larger than that starts later instead, at the first message
    (not a tool result) from which it fits, but never after the last user message.
    """
    messages = [i for i in items if i.item_type == "message"]
    if not messages:
        return _NO_TAIL
    users = [i.position for i in messages if i.role == "user"]
    start = users[-2] if len(users) >= 2 else (users[0] if users else messages[0].position)
    if fresh_tail_count:
        start = min(start, messages[max(0, len(messages) - fresh_tail_count)].position)
    if max_tokens is None:
        return start
    latest = users[-1] if users else messages[-1].position
    size = sum(i.tokens for i in items if i.position >= start)
    tail = [i for i in messages if start <= i.position < latest]
    for index, item in enumerate(tail):
        if size <= max_tokens:
            break
        size -= item.tokens
        start = tail[index + 1].position if index + 1 < len(tail) else latest
    # A tool result stays with the call before it: the tail starts at the next other message.
    return next((i.position for i in messages if i.position >= start and i.role != "tool"), latest)


def leaf_span_tokens(
    excess: int, rounds_left: int, input_window: int, chunk_tokens: int = LEAF_CHUNK_TOKENS
) -> int:
    """How many tokens a leaf span should cover.

    The excess over the drain target, spread over the rounds left, but at least
    ``chunk_tokens`` (:data:`LEAF_CHUNK_TOKENS` unless a small window asks for less)
    and at most the summariser's input share of its window.
    """
    input_cap = int(input_window * INPUT_WINDOW_SHARE)
    share = -(-max(excess, 0) // max(1, rounds_left))
    return min(input_cap, max(chunk_tokens, share))


def leaf_span(
    items: Sequence[ContextItem],
    want_tokens: int,
    fresh_tail_count: int,
    fresh_tail_tokens: int | None = None,
) -> list[ContextItem]:
    """The first run of raw messages before the tail, up to about ``want_tokens``.

    Summaries before the run are skipped; a summary after it ends it. A tool
    result is never split from the messages before it, even past ``want_tokens``.
    """
    tail = tail_start(items, fresh_tail_count, fresh_tail_tokens)
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
    settings: WindowSettings,
    *,
    excess: int,
    rounds_left: int,
    input_window: int,
) -> list[ContextItem]:
    """The leaf span of this round, or ``[]`` if none is worth summarising.

    A span no larger than 1.2 x the leaf target is not worth a summary.
    """
    chunk = settings.leaf_chunk_tokens
    want = leaf_span_tokens(excess, rounds_left, input_window, chunk)
    span = leaf_span(items, want, settings.fresh_tail_count, settings.fresh_tail_tokens)
    if not span or sum(i.tokens for i in span) <= settings.leaf_target_tokens * 1.2:
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


def same_depth_groups(
    items: Sequence[ContextItem], depths: Mapping[str, int]
) -> list[list[ContextItem]]:
    """Maximal runs of adjacent summaries of equal depth, oldest first.

    ``depths`` maps a summary ID to its depth in the DAG; a summary missing from
    it ends a run and starts none.
    """
    groups: list[list[ContextItem]] = []
    current: list[ContextItem] = []
    current_depth = -1
    for item in items:
        depth = depths.get(item.item_id, -1) if item.item_type == "summary" else -1
        if depth >= 0 and depth == current_depth:
            current.append(item)
            continue
        if current:
            groups.append(current)
        current, current_depth = ([item], depth) if depth >= 0 else ([], -1)
    if current:
        groups.append(current)
    return groups


def plan_condense(
    items: Sequence[ContextItem],
    depths: Mapping[str, int],
    *,
    fan_in: int = CONDENSE_FAN_IN,
    pressure: bool = False,
    leaves: Mapping[str, int] | None = None,
) -> list[ContextItem]:
    """The summaries the next condensed pass merges, or ``[]``.

    Normally the oldest ``fan_in`` adjacent summaries of one depth (a full carry).
    Under ``pressure`` (the context is still above its soft threshold and no leaf
    span is left), a shorter run merges too: the shallowest run of at least two
    same-depth summaries, else the two newest adjacent summaries, so the context
    can always shrink. A run is never longer than ``fan_in``.

    With ``leaves`` (summary ID → leaf summaries it covers), a pressure merge keeps the
    DAG logarithmic instead: it is the shallowest run whose result, at depth ``d``,
    covers at least ``fan_in ** (d - 1)`` leaves (so the depth never exceeds
    ``ceil(log_fan_in(leaves)) + 1``), or none.
    """
    fan_in = max(2, fan_in)
    groups = same_depth_groups(items, depths)
    for group in groups:
        if len(group) >= fan_in:
            return group[:fan_in]
    if not pressure:
        return []
    if leaves is not None:
        return _bounded_run(items, depths, leaves, fan_in)
    pairs = [g for g in groups if len(g) >= 2]
    if pairs:
        shallowest = min(pairs, key=lambda g: (depths[g[0].item_id], -g[0].position))
        return shallowest[:fan_in]
    run: list[ContextItem] = []
    for item in items:
        if item.item_type == "summary" and item.item_id in depths:
            run = [*run[-1:], item]
        elif len(run) >= 2:
            break
        else:
            run = []
    return run if len(run) >= 2 else []


def _bounded_run(
    items: Sequence[ContextItem],
    depths: Mapping[str, int],
    leaves: Mapping[str, int],
    fan_in: int,
) -> list[ContextItem]:
    """The shallowest (then longest, then newest) run of 2..``fan_in`` adjacent summaries
    whose merge covers at least ``fan_in ** (depth - 1)`` leaves, or ``[]``."""
    runs: list[list[ContextItem]] = [[]]
    for item in items:
        if item.item_type == "summary" and item.item_id in depths:
            runs[-1].append(item)
        elif runs[-1]:
            runs.append([])
    best: list[ContextItem] = []
    best_key: tuple[int, int, int] | None = None
    for run in runs:
        for i in range(len(run)):
            for j in range(i + 2, min(len(run), i + fan_in) + 1):
                group = run[i:j]
                depth = max(depths[g.item_id] for g in group) + 1
                if sum(leaves.get(g.item_id, 1) for g in group) < fan_in ** (depth - 1):
                    continue
                key = (depth, -len(group), -group[0].position)
                if best_key is None or key < best_key:
                    best, best_key = group, key
    return best
