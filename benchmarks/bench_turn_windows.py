"""Provider rules on every window of long recorded sessions: the long form of
``tests/context/test_validate.py``.

Records ``--turns`` fuzzed OpenAI-format turns (0-3 rounds of 1-3 parallel tool calls,
some failing, about a third of the turns recorded in two pieces) with
``record_messages`` into sessions whose windows are 16k, 32k and 200k tokens (automatic
extractive compaction), and after every call renders the next context in the three wire
formats and runs :func:`mnesis.context.validate` on it. Prints one row per window: turns,
compactions, windows checked, violations (the claim: 0), and seconds.

Run: ``python -m benchmarks.bench_turn_windows [--turns 2000] [--windows 16000,32000,200000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.context import validate
from mnesis.llm import FakeLLM
from mnesis.store import StorePool

_OUTPUT_CHARS = {16_000: 1_500, 32_000: 4_000, 200_000: 60_000}


def fuzzed_turn(rng: random.Random, number: int, output_chars: int) -> list[dict[str, Any]]:
    """One OpenAI chat turn: a question, 0-3 rounds of tool calls, an answer."""
    turn: list[dict[str, Any]] = [{"role": "user", "content": f"question {number}: port?"}]
    for round_number in range(rng.choice([0, 1, 1, 2, 3])):
        ids = [f"c{number}_{round_number}_{i}" for i in range(rng.randint(1, 3))]
        calls = [
            {"id": i, "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            for i in ids
        ]
        content = rng.choice([None, "", f"looking ({round_number})"])
        turn.append({"role": "assistant", "content": content, "tool_calls": calls})
        for call_id in ids:
            failed = rng.random() < 0.1
            text = f"Error: {call_id}" if failed else call_id + " x" * rng.randint(0, output_chars)
            turn.append({"role": "tool", "tool_call_id": call_id, "content": text})
    turn.append({"role": "assistant", "content": f"answer {number}: port 8443"})
    return turn


async def run_window(directory: Path, window: int, turns: int) -> dict[str, Any]:
    """One session of ``turns`` turns in a ``window``-token window."""
    rng = random.Random(window)
    config = MnesisConfig(
        compaction=CompactionConfig(compaction_model="extractive"),
        model_overrides={"context_limit": window, "max_output_tokens": 1_000},
    )
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/windows",
        db_path=str(directory / f"w{window}.db"),
        pool=pool,
        llm=FakeLLM(),
        config=config,
        system_prompt="You answer questions.",
    )
    compactions = checked = violations = 0
    started = time.perf_counter()
    try:
        for number in range(turns):
            turn = fuzzed_turn(rng, number, _OUTPUT_CHARS.get(window, 4_000) // 2)
            cut = rng.randint(1, len(turn)) if rng.random() < 0.3 else len(turn)
            for piece in (turn[:cut], turn[cut:]):
                if not piece:
                    continue
                result = await session.record_messages(piece, format="openai")
                compactions += result.compaction_triggered
                chat = await session.context_for_next_turn(format="openai")
                violations += len(validate(chat, "openai", allow_pending=True))
                items = await session.context_for_next_turn(format="responses")
                violations += len(validate(items, "responses", allow_pending=True))
                body = await session.context_for_next_turn(format="anthropic", cache_control=True)
                violations += len(validate(body, "anthropic", allow_pending=True))
                checked += 3
    finally:
        await session.close()
        await pool.close_all()
    return {
        "window": window,
        "turns": turns,
        "compactions": compactions,
        "windows checked": checked,
        "violations": violations,
        "seconds": round(time.perf_counter() - started, 1),
    }


async def main(turns: int, windows: list[int]) -> None:
    """Run every window and print the table."""
    with tempfile.TemporaryDirectory() as directory:
        rows = [await run_window(Path(directory), w, turns) for w in windows]
    print("| window | turns | compactions | windows checked | violations | seconds |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(json.dumps(v) for v in row.values()) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2_000)
    parser.add_argument("--windows", default="16000,32000,200000")
    args = parser.parse_args()
    asyncio.run(main(args.turns, [int(w) for w in args.windows.split(",")]))
