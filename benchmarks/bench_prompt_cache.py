"""Prompt-caching benchmark: how much of each Anthropic request a provider cache serves.

Replays a generated coding-agent session (``mnesis.testing``) turn by turn into a
session with automatic (extractive) compaction and a small window, so compactions
happen along the way. After every turn it renders the next request with
``context_for_next_turn(format="anthropic")``, with and without ``cache_control``,
and simulates Anthropic's prompt cache:

* a request writes the cache at each of its breakpoints (the prefix up to and
  including that block);
* a request reads the longest prefix, ending at a block boundary no more than 20
  blocks before one of its breakpoints, that an earlier request wrote;
* without breakpoints nothing is written or read.

"Prefix share" is cached tokens over request tokens, summed over turns; the
"shared prefix" column is the upper bound any cache could reach: the longest prefix
each request shares with the previous one. Tokens are the session's estimator over
each block's JSON.

Run: ``python benchmarks/bench_prompt_cache.py [--session NAME] [--turns N] [--window TOKENS]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from typing import Any

from mnesis import MnesisSession
from mnesis.config import CompactionConfig, MnesisConfig
from mnesis.testing import SESSIONS, FakeLLM, generate, replay
from mnesis.tokens.estimator import TokenEstimator

_LOOKBACK = 20


def _blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request as (canonical block JSON, is a breakpoint), system first."""
    out: list[tuple[str, bool]] = []
    system = body["system"]
    if isinstance(system, str):
        out.append((json.dumps({"system": system}), False))
    else:
        for block in system:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            out.append((json.dumps({"system": plain}, sort_keys=True), "cache_control" in block))
    for message in body["messages"]:
        for block in message["content"]:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            out.append(
                (json.dumps([message["role"], plain], sort_keys=True), "cache_control" in block)
            )
    return out


@dataclass
class CacheSim:
    """Anthropic-style prefix cache over block boundaries."""

    written: set[str] = field(default_factory=set)
    previous: list[str] = field(default_factory=list)
    total: int = 0
    cached: int = 0
    shared: int = 0

    def request(
        self, body: dict[str, Any], estimator: TokenEstimator, *, count: bool = True
    ) -> None:
        """Send ``body``: read the cache, then write it at the breakpoints. With
        ``count=False`` the request writes the cache but its tokens are left out of the
        totals (a request inside a turn, when only turn-opening requests are measured)."""
        blocks = _blocks(body)
        tokens = [estimator.estimate(text) for text, _ in blocks]
        digests: list[str] = []
        running = hashlib.sha256()
        for text, _ in blocks:
            running.update(text.encode())
            digests.append(running.copy().hexdigest())
        breakpoints = [i for i, (_, mark) in enumerate(blocks) if mark]
        hit = -1
        for point in breakpoints:
            for i in range(point, max(-1, point - _LOOKBACK), -1):
                if digests[i] in self.written:
                    hit = max(hit, i)
                    break
        common = 0
        for a, b in zip(digests, self.previous, strict=False):
            if a != b:
                break
            common += 1
        if count:
            self.total += sum(tokens)
            self.cached += sum(tokens[: hit + 1])
            self.shared += sum(tokens[:common])
        self.written.update(digests[i] for i in breakpoints)
        self.previous = digests


async def run(name: str, turns: int, window: int) -> dict[str, Any]:
    spec = SESSIONS[name]
    conversation = generate(spec)
    config = MnesisConfig(
        compaction=CompactionConfig(compaction_model="extractive"),
        model_overrides={"context_limit": window, "max_output_tokens": 2_000},
    )
    with tempfile.TemporaryDirectory() as directory:
        session = await MnesisSession.create(
            model="fake/cache-bench", llm=FakeLLM(), config=config, db_path=f"{directory}/b.db"
        )
        estimator = TokenEstimator(session.model_info.encoding)
        plain, marked = CacheSim(), CacheSim()
        count = min(turns, len(conversation.turns))
        for index in range(count):
            await replay(session, conversation, start=index, stop=index + 1)
            await session.compaction_engine.wait_for_pending()
            plain.request(await session.context_for_next_turn(format="anthropic"), estimator)
            marked.request(
                await session.context_for_next_turn(format="anthropic", cache_control=True),
                estimator,
            )
        summaries = len(await session.messages()) - len(await session.conversation_messages())
        await session.close()
    return {
        "session": name,
        "turns": count,
        "window": window,
        "request_tokens": marked.total,
        "shared_prefix_share": marked.shared / marked.total,
        "cached_share_without": plain.cached / plain.total,
        "cached_share_with": marked.cached / marked.total,
        "summary_messages": summaries,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--session", default="bugfix_sprint", choices=sorted(SESSIONS))
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--window", type=int, default=32_000)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.session, args.turns, args.window))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
