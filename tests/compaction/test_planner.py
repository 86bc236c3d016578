"""The span planner on hand-built context views: no store, no model.

Context items are ``(position, type, id, tokens, role)`` rows, as
``get_context_items`` returns them.
"""

from __future__ import annotations

from dataclasses import replace

from mnesis.compaction.planner import (
    LEAF_CHUNK_TOKENS,
    condense_run,
    drain_target,
    leaf_span,
    leaf_span_tokens,
    plan_condense,
    plan_leaf_span,
    same_depth_groups,
    tail_start,
)
from mnesis.config import CompactionConfig
from mnesis.models.window import WindowSettings
from mnesis.store.base import ContextItem


def _view(spec: str, tokens: int = 1_000) -> list[ContextItem]:
    """One item per letter: u(ser), a(ssistant), t(ool) message or S(ummary)."""
    roles = {"u": "user", "a": "assistant", "t": "tool"}
    items = []
    for position, kind in enumerate(spec):
        if kind == "S":
            items.append(ContextItem(position, "summary", f"sum_{position}", tokens))
        else:
            items.append(ContextItem(position, "message", f"msg_{position}", tokens, roles[kind]))
    return items


def _ids(items: list[ContextItem]) -> list[str]:
    return [i.item_id for i in items]


class TestTailStart:
    def test_the_last_exchange_stays_whole(self) -> None:
        # users at 0, 2, 4, 6: the tail starts at the second-to-last user message
        assert tail_start(_view("uauauaua"), fresh_tail_count=0) == 4

    def test_fresh_tail_count_can_pull_the_tail_earlier(self) -> None:
        assert tail_start(_view("uauauaua"), fresh_tail_count=6) == 2

    def test_fresh_tail_count_never_pushes_the_tail_later(self) -> None:
        assert tail_start(_view("uauauaua"), fresh_tail_count=1) == 4

    def test_a_single_user_message_starts_the_tail(self) -> None:
        assert tail_start(_view("Sattua"), fresh_tail_count=0) == 4

    def test_summaries_do_not_count_as_messages(self) -> None:
        # fresh tail of 3 messages: positions 4, 5, 7 (6 is a summary)
        assert tail_start(_view("uauauaSa"), fresh_tail_count=3) == 2

    def test_without_messages_nothing_is_protected_and_nothing_is_a_span(self) -> None:
        view = _view("SSS")
        assert tail_start(view, fresh_tail_count=8) > view[-1].position
        assert leaf_span(view, 10_000, fresh_tail_count=8) == []


class TestLeafSpan:
    def test_the_span_stops_before_the_tail(self) -> None:
        span = leaf_span(_view("uauauaua"), 100_000, fresh_tail_count=0)
        assert _ids(span) == ["msg_0", "msg_1", "msg_2", "msg_3"]

    def test_leading_summaries_are_skipped_and_the_next_summary_ends_the_span(self) -> None:
        span = leaf_span(_view("SSuaSuauaua"), 100_000, fresh_tail_count=0)
        assert _ids(span) == ["msg_2", "msg_3"]

    def test_the_span_stops_at_the_wanted_size(self) -> None:
        span = leaf_span(_view("uauauauaua"), 2_500, fresh_tail_count=0)
        assert _ids(span) == ["msg_0", "msg_1"]

    def test_the_first_item_is_taken_even_if_larger_than_wanted(self) -> None:
        assert _ids(leaf_span(_view("uauaua", tokens=9_000), 10, fresh_tail_count=0)) == ["msg_0"]

    def test_tool_results_stay_with_the_call_before_them(self) -> None:
        span = leaf_span(_view("utttauaua"), 1_500, fresh_tail_count=0)
        assert _ids(span) == ["msg_0", "msg_1", "msg_2", "msg_3"]


class TestLeafSpanTokens:
    def test_the_excess_is_spread_over_the_rounds_left(self) -> None:
        assert leaf_span_tokens(90_000, 3, 1_000_000) == 30_000
        assert leaf_span_tokens(90_001, 3, 1_000_000) == 30_001  # rounded up

    def test_never_below_the_chunk_size(self) -> None:
        assert leaf_span_tokens(0, 10, 1_000_000) == LEAF_CHUNK_TOKENS
        assert leaf_span_tokens(-5_000, 0, 1_000_000) == LEAF_CHUNK_TOKENS

    def test_never_above_75_percent_of_the_input_window(self) -> None:
        assert leaf_span_tokens(900_000, 1, 64_000) == 48_000
        assert leaf_span_tokens(900_000, 1, 8_000) == 6_000  # even below the chunk size


class TestPlanLeafSpan:
    def _plan(self, view: list[ContextItem], leaf_target_tokens: int) -> list[ContextItem]:
        window = WindowSettings.derive(200_000, CompactionConfig())
        settings = replace(window, fresh_tail_count=0, leaf_target_tokens=leaf_target_tokens)
        return plan_leaf_span(view, settings, excess=50_000, rounds_left=1, input_window=200_000)

    def test_a_span_larger_than_the_leaf_target_is_planned(self) -> None:
        assert _ids(self._plan(_view("uauauaua"), 600)) == ["msg_0", "msg_1", "msg_2", "msg_3"]

    def test_a_span_within_1_2_times_the_leaf_target_is_not_worth_a_summary(self) -> None:
        view = _view("uauauaua")  # the span is 4 x 1,000 tokens
        assert self._plan(view, 3_334) == []
        assert self._plan(view, 3_333) != []


class TestCondenseRun:
    def test_the_first_run_of_two_or_more_summaries(self) -> None:
        assert _ids(condense_run(_view("SuaSSSuSS"))) == ["sum_3", "sum_4", "sum_5"]

    def test_a_lone_summary_is_not_a_run(self) -> None:
        assert condense_run(_view("SuaSua")) == []

    def test_a_run_is_cut_at_max_children(self) -> None:
        assert _ids(condense_run(_view("SSSSSua"), max_children=3)) == ["sum_0", "sum_1", "sum_2"]

    def test_a_run_at_the_end_of_the_view(self) -> None:
        assert _ids(condense_run(_view("uaSS"))) == ["sum_2", "sum_3"]


def test_drain_target_is_half_the_soft_threshold() -> None:
    assert drain_target(26_000, 0.6) == 7_800


class TestPlanCondense:
    """Depth-aware condensation: a full carry of same-depth summaries, shorter only under
    pressure."""

    @staticmethod
    def _plan(spec: str, depths: list[int], *, pressure: bool = False) -> list[str]:
        items = _view(spec)
        summary_ids = [i.item_id for i in items if i.item_type == "summary"]
        by_id = dict(zip(summary_ids, depths, strict=True))
        return _ids(plan_condense(items, by_id, fan_in=4, pressure=pressure))

    def test_merges_the_oldest_full_run_of_one_depth(self) -> None:
        assert self._plan("SSSSSSua", [1, 0, 0, 0, 0, 0]) == ["sum_1", "sum_2", "sum_3", "sum_4"]

    def test_never_merges_summaries_of_different_depths_without_pressure(self) -> None:
        assert self._plan("SSSSua", [2, 1, 1, 0]) == []
        assert self._plan("SSSua", [0, 0, 0]) == []

    def test_under_pressure_merges_the_shallowest_pair_first(self) -> None:
        assert self._plan("SSSSua", [2, 2, 1, 1], pressure=True) == ["sum_2", "sum_3"]

    def test_under_pressure_with_all_depths_distinct_merges_the_two_newest(self) -> None:
        assert self._plan("SSSua", [2, 1, 0], pressure=True) == ["sum_1", "sum_2"]

    def test_a_message_between_summaries_splits_a_run(self) -> None:
        assert self._plan("SSuSSua", [0, 0, 0, 0]) == []

    def test_groups_are_runs_of_equal_depth(self) -> None:
        items = _view("SSSuS")
        depths = {"sum_0": 1, "sum_1": 0, "sum_2": 0, "sum_4": 0}
        groups = [_ids(g) for g in same_depth_groups(items, depths)]
        assert groups == [["sum_0"], ["sum_1", "sum_2"], ["sum_4"]]

    def test_a_counter_of_carries_keeps_depth_logarithmic(self) -> None:
        # Simulate 300 leaves arriving one at a time, each followed by full carries only.
        depths: list[int] = []
        deepest = 0
        for _ in range(300):
            depths.append(0)
            while True:
                items = _view("S" * len(depths) + "ua")
                by_id = {f"sum_{i}": d for i, d in enumerate(depths)}
                run = plan_condense(items, by_id, fan_in=4)
                if not run:
                    break
                first = int(run[0].item_id.split("_")[1])
                depth = depths[first] + 1
                depths[first : first + len(run)] = [depth]
                deepest = max(deepest, depth)
        assert deepest == 4  # 4**4 = 256 <= 300 < 4**5
        assert depths == sorted(depths, reverse=True)  # oldest and deepest first
        assert all(depths.count(d) <= 3 for d in set(depths))
