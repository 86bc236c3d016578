"""Issue 33, item 5: prompt-cache reuse of turn-opening requests, measured with the
emulator of ``benchmarks/bench_windows.py`` (an Anthropic-style prefix cache).

A turn that calls tools sends its results back to the model before the next turn opens;
that request writes the cache the next turn-opening request reads. Counting only one
request per turn (the context after it) makes every turn's newest tool output look
uncached: at 32k that alone held the measure at 84 %."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.bench_prompt_cache import CacheSim, _blocks
from benchmarks.bench_windows import run_window

from mnesis.tokens.estimator import TokenEstimator


def _body(*texts: str) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return {"system": "", "messages": [{"role": "user", "content": blocks}]}


def _tokens(body: dict[str, Any], estimator: TokenEstimator) -> list[int]:
    return [estimator.estimate(text) for text, _ in _blocks(body)]


def test_a_request_inside_a_turn_writes_the_cache_without_being_counted() -> None:
    estimator = TokenEstimator()
    sim = CacheSim()
    opening = _body("question one " * 50)
    results = _body("question one " * 50, "tool results " * 400)
    following = _body("question one " * 50, "tool results " * 400, "question two")
    sim.request(opening, estimator)
    assert (sim.total, sim.cached) == (sum(_tokens(opening, estimator)), 0)
    sim.request(results, estimator, count=False)
    assert (sim.total, sim.cached) == (sum(_tokens(opening, estimator)), 0)
    sim.request(following, estimator)
    # The next opening reads the tool results from the cache: only its question is new.
    system, first, tools, question = _tokens(following, estimator)
    assert sim.cached == system + first + tools
    assert sim.total == sum(_tokens(opening, estimator)) + system + first + tools + question


async def test_tool_heavy_turns_at_32k_reuse_over_90_percent_of_turn_opening_tokens(
    tmp_path: Path,
) -> None:
    run = await run_window(32_000, "tool", 30, str(tmp_path), measure_entities=False)
    assert run.compactions >= 2, run
    assert run.cache_reuse >= 0.90, run
    assert run.cache_reuse_one_request < run.cache_reuse
