"""What a session report shows, read from the store in one streaming pass: tokens per
turn, the summary DAG, compactions by level, pruned tool outputs, and the bounded
message index of the search box and the transcript.

Messages are read in pages of :data:`PAGE` (summary markers included, in ``seq`` order)
and dropped after each page: memory holds a few integers per message, the bounded index
(:mod:`mnesis.report.index`), the summaries and at most :data:`MAX_PRUNED_ROWS` rows of
pruned outputs. The context curve is rebuilt in linear time (:mod:`mnesis.report.timeline`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnesis._tasks import cancel_and_wait
from mnesis.compaction.ledger_read import LedgerCollector, LedgerRow
from mnesis.models.message import MessageWithParts
from mnesis.models.model_info import ModelInfo
from mnesis.models.parts import CompactionPart, ToolPart
from mnesis.report.index import DEFAULT_INDEX_CHARS, MessageIndex, check_budget
from mnesis.report.timeline import LandedSummary, Prune, Timeline, TurnPoint
from mnesis.retrieval.results import SUMMARY_FIELDS, copied
from mnesis.store.base import SessionRecord, SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = [
    "MAX_PRUNED_ROWS",
    "PAGE",
    "DagNode",
    "LevelStats",
    "PrunedOutput",
    "ReportData",
    "ToolPruning",
    "TurnPoint",
    "collect",
]

PAGE = 500
"""Messages read per store call."""
MAX_PRUNED_ROWS = 20_000
"""Rows of the pruned-outputs table kept (the first ones, in order); totals count all."""
SUMMARY_CHARS = 4_000
"""Characters of each summary's text shown in the page (``mnesis expand`` shows all)."""


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
    after_message: int = 0
    """How many session messages were stored when it landed (0: marker not found)."""


@dataclass(frozen=True)
class LevelStats:
    """Summaries written at one escalation level."""

    level: int
    summaries: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class PrunedOutput:
    """A tool output pruning tombstoned in the context (kept in full in the store)."""

    message_id: str
    tool_name: str
    tool_call_id: str
    tokens: int
    compacted_at: int


@dataclass(frozen=True)
class ToolPruning:
    """Pruned outputs of one tool: how many, how many tokens."""

    tool_name: str
    outputs: int
    tokens: int


@dataclass
class ReportData:
    """Everything a report draws."""

    session: SessionRecord
    turns: list[TurnPoint]
    nodes: list[DagNode]
    levels: list[LevelStats]
    pruned: list[PrunedOutput]
    """At most :data:`MAX_PRUNED_ROWS` rows; :attr:`pruned_count` counts all."""
    message_count: int
    context_tokens_now: int
    pruned_count: int = 0
    pruned_tokens: int = 0
    pruned_by_tool: list[ToolPruning] = field(default_factory=list)
    index: MessageIndex = field(default_factory=lambda: MessageIndex(0))
    window: int = 0
    """The model's context window (from the session's model and overrides)."""
    work: int = 0
    """Steps the context curve took (linear in messages + lineage edges + prunes)."""
    ledger: list[LedgerRow] = field(default_factory=list)
    """The loss ledger: what each compaction took out of the view, oldest first."""

    @property
    def backlog_turns(self) -> int:
        """Leading turns the model never saw as one context (see ``TurnPoint.backlog``)."""
        return sum(1 for t in self.turns if t.backlog)


@dataclass
class _Pass:
    """State of the streaming pass."""

    estimator: TokenEstimator
    timeline: Timeline
    index: MessageIndex
    sources: dict[str, list[str]]
    children: dict[str, list[str]]
    pruned: list[PrunedOutput] = field(default_factory=list)
    pruned_count: int = 0
    by_tool: dict[str, list[int]] = field(default_factory=dict)
    landed_after: dict[str, int] = field(default_factory=dict)
    turn: int = 0
    ledger: LedgerCollector = field(default_factory=LedgerCollector)

    def page(self, messages: list[MessageWithParts]) -> None:
        for message in messages:
            self.message(message)

    def message(self, m: MessageWithParts) -> None:
        self.ledger.message(m)
        if m.message.is_summary:
            self._marker(m)
            return
        extra = 0
        for part in m.parts:
            if isinstance(part, ToolPart) and part.compacted_at is not None:
                tokens = self.estimator.estimate(part.output or "")
                extra += tokens
                self._pruned(m.id, part, tokens)
        tokens = m.message.token_estimate + extra or MESSAGE_OVERHEAD_TOKENS
        self.turn = self.timeline.add_message(m.id, m.role, m.message.created_at, tokens)
        self.index.add_message(len(self.timeline.ids), self.turn + 1, m)

    def _pruned(self, message_id: str, part: ToolPart, tokens: int) -> None:
        at = part.compacted_at or 0
        self.pruned_count += 1
        stats = self.by_tool.setdefault(part.tool_name, [0, 0])
        stats[0] += 1
        stats[1] += tokens
        self.timeline.prune(Prune(message_id, tokens, at))
        if len(self.pruned) < MAX_PRUNED_ROWS:
            self.pruned.append(
                PrunedOutput(message_id, part.tool_name, part.tool_call_id, tokens, at)
            )

    def _marker(self, m: MessageWithParts) -> None:
        marker = next((p for p in m.parts if isinstance(p, CompactionPart)), None)
        if marker is None:
            return
        after = len(self.timeline.ids)
        self.landed_after[marker.summary_id] = after
        self.timeline.land(
            LandedSummary(
                id=marker.summary_id,
                after=after,
                context_tokens=m.message.token_estimate,
                sources=tuple(self.sources.get(marker.summary_id, ())),
                children=tuple(self.children.get(marker.summary_id, ())),
            )
        )
        kind = "condensed" if self.children.get(marker.summary_id) else "leaf"
        text = f"{kind}, {marker.compacted_message_count:,} messages, level {marker.level}: "
        at = m.message.created_at
        self.index.add_compaction(after, self.turn + 1, marker.summary_id, text + m.text, at)


def _window(record: SessionRecord) -> int:
    overrides = (record.config or {}).get("model_overrides")
    try:
        return ModelInfo.from_model_string(
            record.model, overrides if isinstance(overrides, dict) else None
        ).context_limit
    except ValueError:
        return ModelInfo.from_model_string(record.model).context_limit


async def _summaries(store: ImmutableStore, ids: Sequence[str]) -> list[SummaryRecord]:
    found: list[SummaryRecord] = []
    for start in range(0, len(ids), PAGE):
        found.extend(await store.get_summaries(ids[start : start + PAGE]))
    return found


async def _stream(store: ImmutableStore, session_id: str, seqs: list[int], state: _Pass) -> None:
    """Feed ``state`` every message in ``seq`` order, a page at a time; the next page is
    read (on the store's thread) while this one is processed, so two pages at most are
    held."""

    def read(start: int) -> asyncio.Task[list[MessageWithParts]]:
        after = seqs[start - 1] if start else 0
        return asyncio.ensure_future(store.get_messages(session_id, after_seq=after, limit=PAGE))

    starts = range(0, len(seqs), PAGE)
    ahead = read(0) if seqs else None
    for start in starts:
        assert ahead is not None
        page = await ahead
        ahead = read(start + PAGE) if start + PAGE < len(seqs) else None
        try:
            # Off the event loop: a page is ~500 messages of rendering and counting.
            await asyncio.to_thread(state.page, page)
        except BaseException:
            if ahead is not None:
                with contextlib.suppress(Exception):
                    await cancel_and_wait(ahead)
            raise


async def collect(
    store: ImmutableStore, session_id: str, *, index_chars: int = DEFAULT_INDEX_CHARS
) -> ReportData:
    """Read what the report of ``session_id`` shows (``index_chars``: the bound of the
    inlined message index, see :mod:`mnesis.report.index`)."""
    check_budget(index_chars)
    record = await store.get_session(session_id)
    snapshot = await store.integrity_snapshot(session_id)
    seqs = [row[1] for row in snapshot.messages]
    count = sum(1 for row in snapshot.messages if not row[3])
    sources: dict[str, list[str]] = {}
    for summary_id, message_id in snapshot.summary_messages:
        sources.setdefault(summary_id, []).append(message_id)
    children: dict[str, list[str]] = {}
    for summary_id, merged in snapshot.summary_parents:
        children.setdefault(summary_id, []).append(merged)
    in_context = {s for _, kind, _, s in snapshot.context if kind == "summary" and s}
    summary_ids = [s[0] for s in snapshot.summaries]
    del snapshot
    state = _Pass(TokenEstimator(), Timeline(), MessageIndex(count, index_chars), sources, children)
    await _stream(store, session_id, seqs, state)
    summaries = await _summaries(store, summary_ids)
    window = _window(record)
    turns = await asyncio.to_thread(state.timeline.points, window)
    nodes = await asyncio.to_thread(_nodes, summaries, state, in_context)
    return ReportData(
        session=record,
        turns=turns,
        nodes=sorted(nodes, key=lambda n: (n.created_at, n.id)),
        levels=_levels(nodes),
        pruned=state.pruned,
        message_count=count,
        context_tokens_now=await store.context_token_total(session_id),
        pruned_count=state.pruned_count,
        pruned_tokens=sum(t for _, t in state.by_tool.values()),
        pruned_by_tool=sorted(
            (ToolPruning(name, n, t) for name, (n, t) in state.by_tool.items()),
            key=lambda s: -s.tokens,
        ),
        index=state.index,
        window=window,
        work=state.timeline.work,
        ledger=await asyncio.to_thread(state.ledger.finish),
    )


def _nodes(summaries: list[SummaryRecord], state: _Pass, in_context: set[str]) -> list[DagNode]:
    tokens = dict(zip(state.timeline.ids, state.timeline.tokens, strict=True))
    by_id = {s.id: s for s in summaries}
    return [
        _node(s, state.sources, state.children, by_id, tokens, in_context, state.landed_after)
        for s in summaries
    ]


def _node(
    s: SummaryRecord,
    sources: dict[str, list[str]],
    children: dict[str, list[str]],
    by_id: dict[str, SummaryRecord],
    tokens: dict[str, int],
    in_context: set[str],
    landed_after: dict[str, int],
) -> DagNode:
    kids = children.get(s.id, [])
    before = sum(by_id[k].token_count for k in kids if k in by_id) + sum(
        tokens.get(m, 0) for m in sources.get(s.id, [])
    )
    node = DagNode(
        **copied(s, SUMMARY_FIELDS),
        kind=s.kind,
        tokens_before=before,
        children=kids,
        in_context=s.id in in_context,
        after_message=landed_after.get(s.id, 0),
    )
    node.content = node.content[:SUMMARY_CHARS]
    return node


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
