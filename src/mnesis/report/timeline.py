"""The context curve of a session, rebuilt from lineage in one pass (linear time).

The store keeps no per-turn snapshot of the context. After a turn, the context held every
summary that had landed by then and that no summary landed by then merged, plus every
message seen by then that no such summary covers, minus what pruning had tombstoned by
then. :class:`Timeline` is fed the session in ``seq`` order (messages, and the marker
message of each summary where it landed) and keeps that sum up to date as it goes: each
message is added once and hidden at most once, each summary activated once and merged at
most once, each pruned output subtracted once. :attr:`Timeline.work` counts those steps
so tests can check the bound without timing anything.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

__all__ = ["LandedSummary", "Prune", "Timeline", "TurnPoint"]


@dataclass(frozen=True, slots=True)
class TurnPoint:
    """Tokens after one turn (a user message and what followed it)."""

    turn: int
    message_id: str
    created_at: int
    history_tokens: int
    context_tokens: int
    compacted: bool
    """Whether a compaction (summary or pruning) landed during this turn."""
    backlog: bool = False
    """The model never saw this turn's context as a whole: the history was over the
    window before anything was compacted (an import compacted afterwards)."""


@dataclass(frozen=True, slots=True)
class LandedSummary:
    """A summary where its marker message landed: after ``after`` session messages."""

    id: str
    after: int
    context_tokens: int
    sources: tuple[str, ...]
    children: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Prune:
    """A tool output tombstoned at ``at`` (Unix ms) in message ``message_id``."""

    message_id: str
    tokens: int
    at: int


@dataclass
class Timeline:
    """Messages in ``seq`` order, the summaries where they landed, the prunes; then
    :meth:`points`."""

    ids: list[str] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    created: list[int] = field(default_factory=list)
    turn_starts: list[int] = field(default_factory=list)
    """Index of the first message of each turn."""
    summaries: list[LandedSummary] = field(default_factory=list)
    prunes: list[Prune] = field(default_factory=list)
    work: int = 0
    """Steps taken by :meth:`points` (messages, lineage edges, prunes, turns)."""

    def add_message(self, message_id: str, role: str, created_at: int, tokens: int) -> int:
        """Append a message; returns its turn (0-based)."""
        if role == "user" or not self.turn_starts:
            self.turn_starts.append(len(self.ids))
        self.ids.append(message_id)
        self.tokens.append(tokens)
        self.created.append(created_at)
        return len(self.turn_starts) - 1

    def land(self, summary: LandedSummary) -> None:
        """A summary's marker message, met in ``seq`` order."""
        self.summaries.append(summary)

    def prune(self, prune: Prune) -> None:
        """A tombstoned tool output."""
        self.prunes.append(prune)

    def _turn_of_message(self, index: int) -> int:
        return max(0, bisect_left(self.turn_starts, index + 1) - 1)

    def points(self, window: int) -> list[TurnPoint]:
        """One point per turn; the leading turns over ``window`` before the first
        compaction are marked ``backlog``."""
        if not self.ids:
            return []
        turns = len(self.turn_starts)
        ends = [*(s - 1 for s in self.turn_starts[1:]), len(self.ids) - 1]
        landed: dict[int, list[LandedSummary]] = {}
        for s in self.summaries:
            landed.setdefault(self._turn_of_message(s.after - 1), []).append(s)
        # A prune lands in the first turn that ends at or after it (times made monotone).
        end_times, latest = [], self.created[ends[0]]
        for e in ends:
            latest = max(latest, self.created[e])
            end_times.append(latest)
        pruned_in: dict[int, list[Prune]] = {}
        for p in self.prunes:
            pruned_in.setdefault(min(bisect_left(end_times, p.at), turns - 1), []).append(p)
        # Backlog: the turns before the first compaction, if the history was over the
        # window by then (nothing compacted, so the context would have been all of it).
        first = min([*landed, *pruned_in], default=turns)
        before = sum(self.tokens[: ends[first - 1] + 1]) if first else 0
        backlog = first if before > window else 0
        return self._walk(ends, landed, pruned_in, backlog)

    def _walk(
        self,
        ends: list[int],
        landed: dict[int, list[LandedSummary]],
        pruned_in: dict[int, list[Prune]],
        backlog: int,
    ) -> list[TurnPoint]:
        index = {m: i for i, m in enumerate(self.ids)}
        n = len(self.ids)
        seen, hidden, pruned = bytearray(n), bytearray(n), [0] * n
        active: dict[str, int] = {}
        merged: set[str] = set()
        history = context = 0
        points: list[TurnPoint] = []
        start = 0
        for turn, end in enumerate(ends):
            for i in range(start, end + 1):
                self.work += 1
                seen[i] = 1
                history += self.tokens[i]
                if not hidden[i]:
                    context += self.tokens[i] - pruned[i]
            for s in landed.get(turn, ()):
                self.work += 1
                if s.id not in merged:
                    active[s.id] = s.context_tokens
                    context += s.context_tokens
                for child in s.children:
                    self.work += 1
                    merged.add(child)
                    context -= active.pop(child, 0)
                for source in s.sources:
                    self.work += 1
                    i = index.get(source, -1)
                    if i >= 0 and not hidden[i]:
                        hidden[i] = 1
                        if seen[i]:
                            context -= self.tokens[i] - pruned[i]
            for p in pruned_in.get(turn, ()):
                self.work += 1
                i = index.get(p.message_id, -1)
                if i >= 0:
                    tokens = min(p.tokens, self.tokens[i] - pruned[i])
                    pruned[i] += tokens
                    if seen[i] and not hidden[i]:
                        context -= tokens
            points.append(
                TurnPoint(
                    turn=turn + 1,
                    message_id=self.ids[end],
                    created_at=self.created[end],
                    history_tokens=history,
                    context_tokens=max(0, context),
                    compacted=turn in landed or turn in pruned_in,
                    backlog=turn < backlog,
                )
            )
            start = end + 1
        return points
