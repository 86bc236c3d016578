"""Retrieval benchmarks: recall of planted facts, and grep / expand latency at scale.

    python -m benchmarks.bench_retrieval            # recall + 100k and 1M messages
    python -m benchmarks.bench_retrieval --quick    # recall + 10k and 100k messages

Recall: each session of ``mnesis.testing.SESSIONS`` is replayed with compaction (32k
window, offline extractive summaries); for every planted fact that was compacted out of
the context, a natural-language question is asked with ``grep`` and we record whether
the fact's message is in the top 5 / top 1, and whether ``expand`` of the covering
summary reaches it.

Latency: one session is filled with synthetic messages (a 5,000-word vocabulary, ~40
words each) through the store API, then full-text and regex grep run a fixed query set
(p50/p95), and ``expand`` runs at depth 1 and 3 on a compacted fixture session.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.config import CompactionConfig, RetrievalConfig
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import TextPart
from mnesis.retrieval.results import MessageDescription
from mnesis.store.base import NewMessage
from mnesis.testing import SESSIONS, generate, replay

QUESTIONS = {
    "api_port": "which port did the API move to?",
    "no_migrations": "what must we never modify?",
    "staging_db": "what is the staging database host for the integration run?",
    "hashing_decision": "which password hashing algorithm did we choose?",
    "release_branch": "which branch are releases cut from?",
}
NL_QUERIES = [
    "which port does the service listen on",
    "why did the deploy fail",
    "what did we decide about caching",
    '"connection refused" retry',
    "database migration rollback plan",
    "where is the config loaded",
]
REGEX_QUERIES = [r"port \d{4}", r"\berr(or)?\b.*timeout", r"[A-Z]{3,}_[A-Z]+", r"v\d+\.\d+\.\d+"]


def _config() -> MnesisConfig:
    return MnesisConfig(
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(
            compaction_output_budget=4_000,
            compaction_model="extractive",
            prune_protect_tokens=6_000,
            prune_minimum_tokens=3_000,
        ),
        retrieval=RetrievalConfig(regex_timeout_seconds=2.0),
    )


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def recall(tmp: str, names: list[str]) -> list[tuple[str, int, int, int, int, int]]:
    rows = []
    for name in names:
        pool = StorePool()
        path = os.path.join(tmp, f"recall-{name}.db")
        session = await MnesisSession.create(
            model="fake/bench", db_path=path, pool=pool, config=_config()
        )
        result = await replay(session, generate(SESSIONS[name]))
        await session.compact()
        compacted = at5 = at1 = reached = 0
        for location in result.facts:
            described = await session.describe(location.message_id)
            assert isinstance(described, MessageDescription)
            if described.in_context:
                continue
            compacted += 1
            found = await session.grep(QUESTIONS[location.fact.key], scope="messages", limit=5)
            ids = [m.id for m in found.matches]
            at5 += location.message_id in ids
            at1 += bool(ids) and ids[0] == location.message_id
            covering = described.covering_summary_id
            if covering:
                expanded = await session.expand(covering, depth=64, token_cap=10**6)
                reached += any(m.id == location.message_id for m in expanded.messages)
        rows.append((name, len(result.facts), compacted, at5, at1, reached))
        await session.close()
        await pool.close_all()
    return rows


_WORDS: list[str] = []


def _vocabulary() -> list[str]:
    if not _WORDS:
        rng = random.Random(5)
        letters = "abcdefghijklmnopqrstuvwxyz"
        _WORDS.extend(
            "".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(5_000)
        )
        _WORDS.extend(
            [
                "port",
                "service",
                "listen",
                "deploy",
                "fail",
                "cache",
                "decide",
                "config",
                "database",
                "migration",
                "rollback",
                "connection",
                "refused",
                "retry",
                "timeout",
            ]
        )
    return _WORDS


async def fill(path: str, messages: int) -> tuple[str, float]:
    """A session of ``messages`` synthetic messages; returns its id and the fill time."""
    pool = StorePool()
    session = await MnesisSession.create(
        model="fake/bench",
        db_path=path,
        pool=pool,
        config=MnesisConfig(compaction=CompactionConfig(auto=False)),
    )
    store = session.store
    rng = random.Random(11)
    words = _vocabulary()
    started = time.perf_counter()
    batch: list[NewMessage] = []
    now = int(time.time() * 1000)
    for index in range(messages):
        text = " ".join(rng.choice(words) for _ in range(40))
        if index % 997 == 0:
            text += f" ERROR_CODE port {8000 + index % 1000} v1.{index % 9}.{index % 7} timeout"
        role = "user" if index % 2 == 0 else "assistant"
        message = Message(
            id=new_id("msg"),
            session_id=session.id,
            role=role,
            created_at=now + index,
            token_estimate=60,
        )
        batch.append(NewMessage(message, [TextPart(text=text)], [56]))
        if len(batch) == 2_000:
            await store.append_messages(batch)
            batch = []
    if batch:
        await store.append_messages(batch)
    elapsed = time.perf_counter() - started
    await session.close()
    await pool.close_all()
    return session.id, elapsed


async def latency(path: str, session_id: str, repeats: int) -> dict[str, list[float]]:
    pool = StorePool()
    session = await MnesisSession.load(session_id, db_path=path, pool=pool, config=_config())
    out: dict[str, list[float]] = {"full_text": [], "regex": [], "regex_timeouts": []}
    for _ in range(repeats):
        for query in NL_QUERIES:
            t = time.perf_counter()
            await session.grep(query, scope="messages", limit=20)
            out["full_text"].append((time.perf_counter() - t) * 1000)
    for query in REGEX_QUERIES:
        t = time.perf_counter()
        result = await session.grep(query, mode="regex", scope="messages", limit=20)
        out["regex"].append((time.perf_counter() - t) * 1000)
        out["regex_timeouts"].append(float(result.timed_out))
    await session.close()
    await pool.close_all()
    return out


async def expand_latency(tmp: str) -> list[tuple[int, float, float, int]]:
    pool = StorePool()
    path = os.path.join(tmp, "expand.db")
    session = await MnesisSession.create(
        model="fake/bench", db_path=path, pool=pool, config=_config()
    )
    await replay(session, generate(SESSIONS["infra_migration"]))
    await session.compact()
    items = await session.store.get_context_items(session.id, item_type="summary")
    rows = []
    for depth in (1, 3):
        times = []
        for item in items:
            for _ in range(5):
                t = time.perf_counter()
                await session.expand(item.item_id, depth=depth, token_cap=50_000)
                times.append((time.perf_counter() - t) * 1000)
        rows.append((depth, statistics.median(times), _pct(times, 0.95), len(items)))
    await session.close()
    await pool.close_all()
    return rows


async def main(quick: bool) -> None:
    sizes = [10_000, 100_000] if quick else [100_000, 1_000_000]
    with tempfile.TemporaryDirectory() as tmp:
        names = (
            ["bugfix_sprint", "webapp_auth"]
            if quick
            else ["bugfix_sprint", "webapp_auth", "infra_migration"]
        )
        rows = await recall(tmp, names)
        print("\nRecall of planted facts compacted out of the context (natural-language grep)")
        print(
            f"{'fixture':<18}{'facts':>6}{'compacted':>10}{'recall@5':>10}"
            f"{'recall@1':>10}{'expand reaches':>16}"
        )
        totals = [0, 0, 0, 0, 0]
        for name, facts, compacted, at5, at1, reached in rows:
            print(f"{name:<18}{facts:>6}{compacted:>10}{at5:>10}{at1:>10}{reached:>16}")
            for i, v in enumerate((facts, compacted, at5, at1, reached)):
                totals[i] += v
        if totals[1]:
            print(
                f"{'all':<18}{totals[0]:>6}{totals[1]:>10}"
                f"{totals[2] / totals[1]:>10.0%}{totals[3] / totals[1]:>10.0%}"
                f"{totals[4] / totals[1]:>16.0%}"
            )

        print("\nGrep latency (ms) on one session; regex bounded by regex_timeout_seconds=2.0")
        print(
            f"{'messages':>10}{'fill s':>9}{'fts p50':>10}{'fts p95':>10}"
            f"{'regex p50':>11}{'regex p95':>11}{'regex timed out':>17}"
        )
        for size in sizes:
            path = os.path.join(tmp, f"scale-{size}.db")
            session_id, fill_s = await fill(path, size)
            lat = await latency(path, session_id, repeats=5)
            print(
                f"{size:>10,}{fill_s:>9.1f}{statistics.median(lat['full_text']):>10.2f}"
                f"{_pct(lat['full_text'], 0.95):>10.2f}{statistics.median(lat['regex']):>11.1f}"
                f"{_pct(lat['regex'], 0.95):>11.1f}"
                f"{int(sum(lat['regex_timeouts'])):>12}/{len(lat['regex_timeouts'])}"
            )
            os.remove(path)

        print("\nExpand latency (ms), infra_migration fixture after compaction, token_cap=50k")
        print(f"{'depth':>6}{'p50':>9}{'p95':>9}{'summaries':>11}")
        for depth, p50, p95, count in await expand_latency(tmp):
            print(f"{depth:>6}{p50:>9.2f}{p95:>9.2f}{count:>11}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
