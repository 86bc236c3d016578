"""What a session report shows, read from the store: tokens per turn, the summary DAG,
compactions by level and pruned tool outputs.

The store keeps no per-turn snapshot of the context, so the context curve is rebuilt
from lineage: after a turn, the context holds every summary created by then that no
later-created-by-then summary merged, plus every message no such summary covers, minus
what pruning had tombstoned by then.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mnesis.models.message import MessageWithParts
from mnesis.models.parts import ToolPart
from mnesis.retrieval.render import full_message_text
from mnesis.retrieval.results import SUMMARY_FIELDS, copied
from mnesis.store.base import SessionRecord, SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["DagNode", "LevelStats", "PrunedOutput", "ReportData", "TurnPoint", "collect"]


@dataclass(frozen=True)
class TurnPoint:
    """Tokens after one turn (a user message and what followed it)."""

    turn: int
    message_id: str
    created_at: int
    history_tokens: int
    context_tokens: int
    compacted: bool
    """Whether a compaction (summary or pruning) landed during this turn."""


@dataclass
class DagNode:
    """One summary of the DAG."""

    id: str
    kind: str
    depth: int
    level: int
    token_count: int
    tokens_before: int
    """Tokens of what it replaced: its messages (leaf) or child summaries (condensed)."""
    content: str
    span_start_message_id: str | None
    span_end_message_id: str | None
    source_message_count: int
    created_at: int
    children: list[str] = field(default_factory=list)
    in_context: bool = False


@dataclass(frozen=True)
class LevelStats:
    """Summaries written at one escalation level."""

    level: int
    summaries: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class PrunedOutput:
    """A tool output pruning tombstoned in the context (kept in full in the store)."""

    message_id: str
    tool_name: str
    tool_call_id: str
    tokens: int
    compacted_at: int


@dataclass
class ReportData:
    """Everything a report draws."""

    session: SessionRecord
    turns: list[TurnPoint]
    nodes: list[DagNode]
    levels: list[LevelStats]
    pruned: list[PrunedOutput]
    message_count: int
    context_tokens_now: int


def _pruned(message: MessageWithParts, estimator: TokenEstimator) -> list[PrunedOutput]:
    found = []
    for part in message.parts:
        if isinstance(part, ToolPart) and part.compacted_at is not None:
            found.append(
                PrunedOutput(
                    message_id=message.id,
                    tool_name=part.tool_name,
                    tool_call_id=part.tool_call_id,
                    tokens=estimator.estimate(part.output or ""),
                    compacted_at=part.compacted_at,
                )
            )
    return found


def _turn_ends(messages: list[MessageWithParts]) -> list[int]:
    """Index of the last message of each turn (a turn starts at a user message)."""
    ends = [i - 1 for i in range(1, len(messages)) if messages[i].role == "user"]
    return [*[e for e in ends if e >= 0], len(messages) - 1] if messages else []


async def collect(store: ImmutableStore, session_id: str) -> ReportData:
    """Read what the report of ``session_id`` shows."""
    estimator = TokenEstimator()
    record = await store.get_session(session_id)
    messages = await store.get_messages(session_id, include_summaries=False)
    snapshot = await store.integrity_snapshot(session_id)
    summaries = await store.get_summaries([s[0] for s in snapshot.summaries])
    tokens = {
        m.id: estimator.estimate(full_message_text(m)) + MESSAGE_OVERHEAD_TOKENS
        for m in messages
    }
    sources: dict[str, list[str]] = {}
    for summary_id, message_id in snapshot.summary_messages:
        sources.setdefault(summary_id, []).append(message_id)
    children: dict[str, list[str]] = {}
    for summary_id, merged in snapshot.summary_parents:
        children.setdefault(summary_id, []).append(merged)
    in_context = {s for _, kind, _, s in snapshot.context if kind == "summary" and s}
    by_id = {s.id: s for s in summaries}
    nodes = [_node(s, sources, children, by_id, tokens, in_context) for s in summaries]
    pruned = [p for m in messages for p in _pruned(m, estimator)]
    turns = _turn_points(messages, tokens, summaries, sources, children, pruned)
    return ReportData(
        session=record,
        turns=turns,
        nodes=sorted(nodes, key=lambda n: (n.created_at, n.id)),
        levels=_levels(nodes),
        pruned=pruned,
        message_count=len(messages),
        context_tokens_now=await store.context_token_total(session_id),
    )


def _node(
    s: SummaryRecord,
    sources: dict[str, list[str]],
    children: dict[str, list[str]],
    by_id: dict[str, SummaryRecord],
    tokens: dict[str, int],
    in_context: set[str],
) -> DagNode:
    kids = children.get(s.id, [])
    before = sum(by_id[k].token_count for k in kids if k in by_id) + sum(
        tokens.get(m, 0) for m in sources.get(s.id, [])
    )
    return DagNode(
        **copied(s, SUMMARY_FIELDS),
        kind=s.kind,
        tokens_before=before,
        children=kids,
        in_context=s.id in in_context,
    )


def _levels(nodes: list[DagNode]) -> list[LevelStats]:
    levels: dict[int, list[DagNode]] = {}
    for node in nodes:
        levels.setdefault(node.level, []).append(node)
    return [
        LevelStats(
            level=level,
            summaries=len(group),
            tokens_before=sum(n.tokens_before for n in group),
            tokens_after=sum(n.token_count for n in group),
        )
        for level, group in sorted(levels.items())
    ]


def _turn_points(
    messages: list[MessageWithParts],
    tokens: dict[str, int],
    summaries: list[SummaryRecord],
    sources: dict[str, list[str]],
    children: dict[str, list[str]],
    pruned: list[PrunedOutput],
) -> list[TurnPoint]:
    ends = _turn_ends(messages)
    # A compaction lands in the first turn that ends at or after it (or the last turn).
    end_times = [messages[e].message.created_at for e in ends]

    def turn_of(ms: int) -> int:
        return next((t for t, end in enumerate(end_times) if end >= ms), len(ends) - 1)

    summary_turn = {s.id: turn_of(s.created_at) for s in summaries}
    prune_turn = [(turn_of(p.compacted_at), p.message_id, p.tokens) for p in pruned]
    deep: dict[str, set[str]] = {}

    def covered(summary_id: str) -> set[str]:
        if summary_id not in deep:
            found = set(sources.get(summary_id, []))
            for child in children.get(summary_id, []):
                found |= covered(child)
            deep[summary_id] = found
        return deep[summary_id]

    points = []
    history = 0
    start = 0
    for turn, end in enumerate(ends):
        history += sum(tokens[m.id] for m in messages[start : end + 1])
        seen = {m.id for m in messages[: end + 1]}
        made = [s for s in summaries if summary_turn[s.id] <= turn]
        merged = {k for s in made for k in children.get(s.id, [])}
        active = [s for s in made if s.id not in merged]
        hidden = set().union(*(covered(s.id) for s in active)) if active else set()
        context = sum(s.token_count + MESSAGE_OVERHEAD_TOKENS for s in active)
        shown = seen - hidden
        context += sum(tokens[m] for m in shown)
        context -= sum(t for landed, m, t in prune_turn if landed <= turn and m in shown)
        compacted = any(summary_turn[s.id] == turn for s in summaries) or any(
            landed == turn for landed, _, _ in prune_turn
        )
        points.append(
            TurnPoint(
                turn=turn + 1,
                message_id=messages[end].id,
                created_at=messages[end].message.created_at,
                history_tokens=history,
                context_tokens=max(0, context),
                compacted=compacted,
            )
        )
        start = end + 1
    return points
