"""Prompt-caching breakpoints on OpenAI-format messages (the litellm path to Anthropic)."""

from __future__ import annotations

import copy
from typing import Any

from mnesis.llm.cache import EPHEMERAL, MAX_BREAKPOINTS, breakpoint_indexes, mark_breakpoints
from mnesis.llm.litellm_client import caches_prompts

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "[LCM summary sum_1 | ...]"},
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "out"},
]


def test_each_role_carries_the_breakpoint_where_litellm_maps_it() -> None:
    before = copy.deepcopy(MESSAGES)
    marked = mark_breakpoints(MESSAGES, [0, 1, 3, 4])
    assert before == MESSAGES  # the input is not changed
    assert marked[0]["content"] == [
        {"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}
    ]
    assert marked[1]["content"][0]["cache_control"] == EPHEMERAL
    assert marked[3] == MESSAGES[3]  # an assistant turn that only calls tools: no block
    assert marked[4] == {**MESSAGES[4], "cache_control": EPHEMERAL}
    assert marked[2] is MESSAGES[2]


def test_at_most_four_and_the_longest_prefixes_win() -> None:
    assert breakpoint_indexes(10, [9, 0, 3, 3, 5, 7, 12, -1]) == (3, 5, 7, 9)
    assert len(breakpoint_indexes(100, range(100))) == MAX_BREAKPOINTS
    many = [{"role": "user", "content": f"m{i}"} for i in range(8)]
    marked = mark_breakpoints(many, range(8))
    assert sum(isinstance(m["content"], list) for m in marked) == MAX_BREAKPOINTS


def test_block_content_gets_the_breakpoint_on_its_last_block() -> None:
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    [marked] = mark_breakpoints([message], [0])
    assert "cache_control" not in marked["content"][0]
    assert marked["content"][1]["cache_control"] == EPHEMERAL
    assert mark_breakpoints([{"role": "user", "content": ""}], [0]) == [
        {"role": "user", "content": ""}
    ]


def test_which_models_get_breakpoints_by_default() -> None:
    assert caches_prompts("anthropic/claude-sonnet-4-5")
    assert caches_prompts("claude-3-5-haiku-20241022")
    assert not caches_prompts("openai/gpt-4o")
    assert not caches_prompts("gpt-4o")
    assert not caches_prompts("ollama/llama3")
