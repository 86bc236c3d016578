"""The context curve: the one-pass :class:`Timeline` against a from-the-definition
reference on random sessions, its work counted (linear, not timed), and the backlog of a
session compacted after an import."""

from __future__ import annotations

import random
from dataclasses import dataclass

from mnesis.report.timeline import LandedSummary, Prune, Timeline


@dataclass
class _Session:
    """Messages (id, role, time, tokens), summaries where they landed, prunes."""

    messages: list[tuple[str, str, int, int]]
    summaries: list[LandedSummary]
    prunes: list[Prune]

    def timeline(self) -> Timeline:
        t = Timeline()
        by_after: dict[int, list[LandedSummary]] = {}
        for s in self.summaries:
            by_after.setdefault(s.after, []).append(s)
        for k, (mid, role, at, tokens) in enumerate(self.messages):
            for s in by_after.pop(k, []):
                t.land(s)
            t.add_message(mid, role, at, tokens)
        for rest in by_after.values():
            for s in rest:
                t.land(s)
        for p in self.prunes:
            t.prune(p)
        return t


def _random_session(rng: random.Random, n: int) -> _Session:
    """``n`` messages in turns of 1-4; leaf summaries over old uncovered runs, condensed
    ones over active leaves, prunes of visible messages, all landing as they would."""
    messages = []
    at = 1_000
    for i in range(n):
        role = "user" if i == 0 or rng.random() < 0.35 else "assistant"
        at += rng.randrange(1, 50)
        messages.append((f"m{i}", role, at, rng.randrange(5, 400)))
    summaries: list[LandedSummary] = []
    prunes: list[Prune] = []
    covered = 0
    active: list[str] = []
    for k in range(10, n, 7):
        if rng.random() < 0.5 and covered < k - 6:
            end = rng.randrange(covered + 1, k - 4)
            sid = f"s{len(summaries)}"
            summaries.append(
                LandedSummary(sid, k, 40, tuple(f"m{i}" for i in range(covered, end)), ())
            )
            active.append(sid)
            covered = end
        if len(active) >= 3 and rng.random() < 0.4:
            merged = active[:3]
            sid = f"s{len(summaries)}"
            summaries.append(LandedSummary(sid, k, 30, (), tuple(merged)))
            active = [sid, *active[3:]]
        if rng.random() < 0.5:
            target = rng.randrange(covered, k)
            prunes.append(Prune(f"m{target}", rng.randrange(1, 5), messages[k - 1][2]))
    return _Session(messages, summaries, prunes)


def _reference(session: _Session) -> list[int]:
    """Context after each turn, from the definition (quadratic): the summaries landed by
    then that nothing landed by then merged, plus the messages seen by then that they do
    not cover, minus what was pruned of those by then."""
    msgs = session.messages
    starts = [i for i, m in enumerate(msgs) if m[1] == "user" or i == 0]
    ends = [*(s - 1 for s in starts[1:]), len(msgs) - 1]
    index = {m[0]: i for i, m in enumerate(msgs)}
    out = []
    for end in ends:
        made = [s for s in session.summaries if s.after <= end + 1]
        merged = {c for s in made for c in s.children}
        live = [s for s in made if s.id not in merged]
        deep: set[str] = set()
        by_id = {s.id: s for s in made}

        def cover(s: LandedSummary, deep: set[str] = deep, by_id: dict = by_id) -> None:
            deep.update(s.sources)
            for c in s.children:
                if c in by_id:
                    cover(by_id[c])

        for s in live:
            cover(s)
        turn_end_time = max(msgs[i][2] for i in range(end + 1))
        total = sum(s.context_tokens for s in live)
        for i in range(end + 1):
            if msgs[i][0] in deep:
                continue
            cut = sum(
                p.tokens
                for p in session.prunes
                if p.message_id == msgs[i][0] and p.at <= turn_end_time
            )
            total += msgs[i][3] - min(cut, msgs[i][3])
        out.append(max(0, total))
        assert all(index[m] <= end for s in live for m in s.sources if m in index)
    return out


class TestAgainstTheDefinition:
    def test_random_sessions_match_the_reference(self) -> None:
        rng = random.Random(30)
        for _ in range(25):
            session = _random_session(rng, rng.randrange(20, 160))
            points = session.timeline().points(window=10**9)
            assert [p.context_tokens for p in points] == _reference(session)
            assert points[-1].history_tokens == sum(m[3] for m in session.messages)

    def test_a_hand_made_session(self) -> None:
        messages = [("a", "user", 1, 100), ("b", "assistant", 2, 300), ("c", "user", 3, 50)]
        leaf = LandedSummary("s1", 2, 20, ("a", "b"), ())
        session = _Session(messages, [leaf], [Prune("b", 200, 2)])
        points = session.timeline().points(window=10**9)
        # Turn 1 ends after b: the prune (at t=2) and the leaf (after 2 messages) landed.
        assert [(p.history_tokens, p.context_tokens, p.compacted) for p in points] == [
            (400, 20, True),
            (450, 70, False),
        ]


class TestWorkIsLinear:
    def _work(self, n: int) -> tuple[int, int]:
        session = _random_session(random.Random(n), n)
        timeline = session.timeline()
        timeline.points(window=10**9)
        edges = sum(len(s.sources) + len(s.children) for s in session.summaries)
        return timeline.work, n + len(session.summaries) + edges + len(session.prunes)

    def test_one_step_per_message_edge_and_prune(self) -> None:
        for n in (200, 3_000):
            work, items = self._work(n)
            assert work == items

    def test_ten_times_the_session_is_ten_times_the_work(self) -> None:
        small, _ = self._work(500)
        large, _ = self._work(5_000)
        assert 8 * small < large < 12 * small


class TestBacklog:
    def _import_then_compact(self, turns: int) -> Timeline:
        t = Timeline()
        for i in range(turns):
            t.add_message(f"u{i}", "user", i, 1_000)
            t.add_message(f"a{i}", "assistant", i, 1_000)
        sources = tuple(f"{r}{i}" for i in range(turns - 2) for r in "ua")
        t.land(LandedSummary("s", 2 * turns, 500, sources, ()))
        return t

    def test_turns_over_the_window_before_the_first_compaction_are_backlog(self) -> None:
        points = self._import_then_compact(100).points(window=32_000)
        assert [p.backlog for p in points] == [True] * 99 + [False]
        assert points[-1].context_tokens == 500 + 4 * 1_000

    def test_a_history_within_the_window_is_no_backlog(self) -> None:
        points = self._import_then_compact(100).points(window=1_000_000)
        assert not any(p.backlog for p in points)
