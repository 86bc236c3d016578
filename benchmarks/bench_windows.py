"""Compaction at every window size: cadence, DAG depth and the summariser's input (issue 33).

Replays generated coding-agent sessions (``mnesis.testing``, the ``webapp`` story) into a
session whose window is stated with ``create(..., context_limit=...)`` and every
compaction setting left at its default (so derived from the window), over windows 16k /
32k / 128k / 200k and two kinds of turns: ``chat`` (no tool calls) and ``tool`` (every
turn calls tools, 1.2-4.5 KB of output each). Automatic compaction runs after each turn
(waited for, so runs are deterministic); the summariser is a scripted model (a plain
async function: deterministic answers, and it records the size of every prompt).

Columns: compaction runs that changed the context per 100 turns, summariser (model) calls
per 100 turns, leaves and the maximum condensation depth against the bound
``ceil(log_fanin(leaves)) + 1``, the largest prompt the summariser received against the
window, the largest context seen after a turn against the usable budget, the share of
turn-opening request tokens an Anthropic-style prompt cache serves
(``bench_prompt_cache.CacheSim``), the most compaction runs around one turn, and the stop
reasons of the runs. Entity survival: at the end of the run (all stored entities in the
context; a sample of 150 of those out of it grepped) and after every compaction (all
entities stored so far in the context; up to 30 of those that left it since the previous
compaction, a seeded random sample, grepped), as min / mean over the compactions.
The ledger's weight: the bytes of the summary markers' stored JSON (each holds its loss
ledger) against the bytes of the stored messages' text (text parts, tool inputs and
outputs).

The cache sees the requests an agent sends: each turn opens with the context and the
user's message (``context_for_next_turn(user=...)``, with ``cache_control``: the measured
request); a ``tool`` turn then sends its tool results back to the model (the context
after the turn), which writes the cache the next turn reads. "one request" is the share
when only the context after each turn is sent (the tool results of a turn first seen by
the next turn's request: every turn's newest tool output counts as uncached).

Run: ``python benchmarks/bench_windows.py [--turns N] [--windows 16000,32000]
[--kinds chat,tool] [--json]`` (default: 400 turns each, about two minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import random
import re
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.bench_prompt_cache import CacheSim
from mnesis import MnesisSession
from mnesis.compaction.ledger import extract_entities, holds, tool_texts
from mnesis.compaction.ledger_read import read_ledger
from mnesis.config import MnesisConfig
from mnesis.events.bus import MnesisEvent
from mnesis.models.budget import ContextBudget
from mnesis.models.parts import CompactionPart, MessagePart, TextPart, ToolPart
from mnesis.store.codec import encode_part
from mnesis.testing import ConversationSpec, Turn, generate
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "KINDS",
    "WINDOWS",
    "RecordingSummariser",
    "WindowRun",
    "assistant_parts",
    "depth_bound",
    "entity_survival",
    "main",
    "run_window",
    "stored_bytes",
]

WINDOWS = (16_000, 32_000, 128_000, 200_000)
KINDS = ("chat", "tool")
"""``chat``: the assistant answers in prose (the tool outputs of the ``tool`` session,
cut to 1,600 characters, become its text); ``tool``: every turn calls tools."""
CHAT_CHARS = 1_600
SAMPLE_PER_COMPACTION = 30
"""Entities that left the context grepped after each compaction (a seeded random sample)."""
MODEL = "local/coder"
"""A model string the model table does not know: its window is stated at create()."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./-]{2,}")
_ESTIMATOR = TokenEstimator()


def max_output_for(window: int) -> int:
    """The output limit a local model of ``window`` tokens is typically served with."""
    return min(8_192, max(1_024, window // 8))


@dataclass
class RecordingSummariser:
    """A scripted summarisation model: answers with the leading words of its input and
    records the token size of every prompt it receives."""

    prompt_tokens: list[int] = field(default_factory=list)

    async def __call__(self, messages: list[dict[str, Any]]) -> str:
        """The summary: the first 60 words of the transcript (deterministic)."""
        text = "\n".join(str(m.get("content", "")) for m in messages)
        self.prompt_tokens.append(_ESTIMATOR.estimate(text))
        user = str(messages[-1].get("content", "")) if messages else ""
        words = _WORD.findall(user)[:60]
        return "Summary: " + " ".join(words) + "."


@dataclass
class WindowRun:
    """What one window x kind replay measured."""

    window: int
    kind: str
    turns: int
    compactions: int = 0
    summariser_calls: int = 0
    leaves: int = 0
    condensed: int = 0
    max_depth: int = 0
    depth_bound: int = 0
    max_prompt_tokens: int = 0
    max_context_tokens: int = 0
    usable: int = 0
    stop_reasons: dict[str, int] = field(default_factory=dict)
    cache_reuse: float = 0.0
    """Share of the turn-opening requests' tokens an Anthropic-style prompt cache serves
    (``cache_control`` breakpoints; ``bench_prompt_cache.CacheSim``)."""
    cache_reuse_one_request: float = 0.0
    """The same with one request per turn, rendered after it (the turn's tool results
    counted as new in the next turn: the measure before the tool-result request)."""
    max_runs_per_turn: int = 0
    """The most compaction runs that changed the context around one turn."""
    entities: int = 0
    """Distinct entities (paths, commands, identifiers, numbers, URLs, decisions) stored."""
    in_context: float = 0.0
    """Share of them still readable in the context at the end."""
    paths_in_context: float = 0.0
    commands_in_context: float = 0.0
    by_grep: float = 0.0
    """Share of a sample of those out of the context that one grep finds (a hit holds it)."""
    grep_sample: int = 0
    grep_misses: list[str] = field(default_factory=list)
    """The sampled entities one grep did not find."""
    in_ledger: float = 0.0
    """Share of those out of the context that a ledger row lists as dropped, or names a
    message holding it (a row past its per-kind listing cap)."""
    after_each_in_context: list[float] = field(default_factory=list)
    """After each turn whose compaction changed the context: the share of the entities
    stored so far still readable in the context."""
    after_each_by_grep: list[float] = field(default_factory=list)
    """After each such turn: of a sample of the entities that left the context since the
    previous measure (at most ``SAMPLE_PER_COMPACTION``), the share one grep finds
    (compactions that took no entity out: skipped)."""
    after_each_sampled: int = 0
    """Entities grepped over all the compactions."""
    after_each_seconds: float = 0.0
    """Wall time the measures after each compaction took (not the replay's)."""
    marker_bytes: int = 0
    """Bytes of the summary markers' stored JSON (each holds its loss ledger)."""
    text_bytes: int = 0
    """Bytes of the stored messages' indexed text (text parts, tool inputs and outputs)."""

    def per_100(self, count: int) -> float:
        """``count`` per 100 turns."""
        return 100.0 * count / max(1, self.turns)


async def run_window(
    window: int,
    kind: str,
    turns: int,
    directory: str,
    *,
    seed: int = 5,
    fan_in: int = 4,
    measure_cache: bool = True,
    measure_entities: bool = True,
) -> WindowRun:
    """Replay ``turns`` turns of ``kind`` into a ``window``-token session and measure."""
    spec = ConversationSpec(f"{kind}-{window}", seed=seed, turns=turns, tool_turn_share=1.0)
    conversation = generate(spec)
    summariser = RecordingSummariser()
    session = await MnesisSession.create(
        model=MODEL,
        llm=summariser,
        config=MnesisConfig(),
        db_path=f"{directory}/{kind}-{window}.db",
        context_limit=window,
        max_output_tokens=max_output_for(window),
    )
    run = WindowRun(window=window, kind=kind, turns=turns)
    run.usable = ContextBudget.compute(session.model_info, session.config).usable
    reasons: Counter[str] = Counter()

    def on_completed(_event: MnesisEvent, payload: dict[str, Any]) -> None:
        result = payload.get("result", payload)
        reasons[str(result.get("stop_reason"))] += 1
        if result.get("level_used") or result.get("pruned_tool_outputs"):
            run.compactions += 1

    session.subscribe(MnesisEvent.COMPACTION_COMPLETED, on_completed)
    engine = session.compaction_engine
    cache, single = CacheSim(), CacheSim()
    estimator = TokenEstimator(session.model_info.encoding)
    tracker = _SurvivalTracker(random.Random(seed))
    for turn in conversation.turns:
        before = run.compactions
        if measure_cache:
            opening = await session.context_for_next_turn(
                format="anthropic", cache_control=True, user=turn.user_text
            )
            cache.request(opening, estimator)
        await session.record(list(turn.user), assistant_parts(turn, kind))
        await engine.wait_for_pending()
        run.max_runs_per_turn = max(run.max_runs_per_turn, run.compactions - before)
        run.max_context_tokens = max(run.max_context_tokens, session.context_tokens)
        if measure_entities and run.compactions > before:
            started = time.perf_counter()
            await tracker.measure(session, run)
            run.after_each_seconds += time.perf_counter() - started
        if measure_cache:
            after = await session.context_for_next_turn(format="anthropic", cache_control=True)
            single.request(after, estimator)
            if kind == "tool" and run.compactions == before:
                # The request that sends the turn's tool results to the model: it writes
                # the cache the next turn-opening request reads (not itself measured).
                # After a compaction the view it saw is gone, so it would add nothing.
                cache.request(after, estimator, count=False)
    run.cache_reuse = cache.cached / cache.total if cache.total else 0.0
    run.cache_reuse_one_request = single.cached / single.total if single.total else 0.0
    snapshot = await session.store.integrity_snapshot(session.id)
    summaries = await session.store.get_summaries([s[0] for s in snapshot.summaries])
    run.leaves = sum(1 for s in summaries if s.kind == "leaf")
    run.condensed = len(summaries) - run.leaves
    run.max_depth = max((s.depth for s in summaries), default=0)
    run.depth_bound = depth_bound(run.leaves, fan_in)
    run.summariser_calls = len(summariser.prompt_tokens)
    run.max_prompt_tokens = max(summariser.prompt_tokens, default=0)
    run.stop_reasons = dict(reasons)
    run.marker_bytes, run.text_bytes = stored_bytes(await _all_messages(session))
    if measure_entities:
        await entity_survival(session, run)
    await session.close()
    return run


async def _all_messages(session: MnesisSession) -> list[Any]:
    out: list[Any] = []
    while page := await session.store.get_messages(session.id, after_seq=len(out), limit=500):
        out.extend(page)
    return out


Key = tuple[str, str]


def stored_bytes(messages: list[Any]) -> tuple[int, int]:
    """The bytes of the summary markers' stored JSON and of the other messages' text,
    as the store encodes them."""
    markers = text = 0
    for m in messages:
        for part in m.parts:
            columns = encode_part(part)
            if isinstance(part, CompactionPart):
                markers += len(columns["content"].encode())
            elif not m.message.is_summary:
                text += len((columns["text_content"] or "").encode())
    return markers, text


def _stored_entities(messages: list[Any]) -> dict[Key, set[str]]:
    """Every entity of the stored conversation (pruned tool outputs included) and every
    message holding it."""
    where: dict[Key, set[str]] = {}
    for m in messages:
        if m.message.is_summary:
            continue
        keys: list[Key] = []
        for part in m.parts:
            if isinstance(part, TextPart):
                keys.extend(extract_entities(part.text))
            elif isinstance(part, ToolPart):
                for text in tool_texts(part):
                    keys.extend(extract_entities(text, prose=False))
        for key in keys:
            where.setdefault(key, set()).add(m.id)
    return where


async def _grep_finds(session: MnesisSession, by_id: dict[str, Any], key: Key) -> bool:
    """True if one grep for ``key``'s value hits a message that holds it: a quoted
    full-text query; for a number it misses (full text drops a sign, unit or
    separators), a regex (a scan of the store: the costly form, so the second)."""
    kind, value = key
    queries = [(f'"{value}"', "full_text")]
    if kind == "number":
        queries.append((rf"(?<![\w.]){re.escape(value)}(?![\w%])", "regex"))
    for query, mode in queries:
        result = await session.grep(query, mode=mode, limit=10)
        if any(
            match.kind == "message" and match.id in by_id and _holds(by_id[match.id], value)
            for match in result.matches
        ):
            return True
    return False


async def _out_of_view(session: MnesisSession, where: dict[Key, set[str]]) -> tuple[int, list[Key]]:
    """How many of ``where``'s entities the context's text holds, and those out of the
    context: not in its text, and no message holding them is in the view."""
    view = json.dumps(await session.context_for_next_turn(format="text"), ensure_ascii=False)
    items = await session.store.get_context_items(session.id)
    raw = {i.item_id for i in items if i.item_type == "message"}
    kept = 0
    gone: list[Key] = []
    for key, ids in where.items():
        if holds(view, key[1]):
            kept += 1
        elif ids.isdisjoint(raw):
            gone.append(key)
    return kept, gone


@dataclass
class _SurvivalTracker:
    """Entity survival after each compaction: reads the messages stored since the last
    measure, then the share of all entities so far in the context and a sampled grep."""

    rng: random.Random
    where: dict[Key, set[str]] = field(default_factory=dict)
    by_id: dict[str, Any] = field(default_factory=dict)
    gone: set[Key] = field(default_factory=set)
    """Entities seen out of the context at an earlier measure."""
    seq: int = 0

    async def measure(self, session: MnesisSession, run: WindowRun) -> None:
        """Append the shares after the compaction just run to ``run``."""
        while page := await session.store.get_messages(session.id, after_seq=self.seq, limit=500):
            self.seq += len(page)
            for key, ids in _stored_entities(page).items():
                self.where.setdefault(key, set()).update(ids)
            self.by_id.update((m.id, m) for m in page if not m.message.is_summary)
        kept, gone = await _out_of_view(session, self.where)
        run.after_each_in_context.append(kept / max(1, len(self.where)))
        left = [k for k in gone if k not in self.gone]
        self.gone.update(left)
        picked = self.rng.sample(left, min(SAMPLE_PER_COMPACTION, len(left)))
        if not picked:
            return
        found = 0
        for key in picked:
            if await _grep_finds(session, self.by_id, key):
                found += 1
            elif len(run.grep_misses) < 20:
                run.grep_misses.append(key[1])
        run.after_each_sampled += len(picked)
        run.after_each_by_grep.append(found / len(picked))


def _holds(message: Any, value: str) -> bool:
    for part in message.parts:
        if isinstance(part, TextPart) and holds(part.text, value):
            return True
        if isinstance(part, ToolPart) and any(holds(t, value) for t in tool_texts(part)):
            return True
    return False


async def entity_survival(session: MnesisSession, run: WindowRun, sample: int = 150) -> None:
    """Entity survival after the run's compactions: the share of the stored entities
    still readable in the context, and of those out of it, the share one grep finds
    (a sample of ``sample``, spread over the session; see :func:`_grep_finds`) and the
    share the ledger lists."""
    messages = await _all_messages(session)
    where = _stored_entities(messages)
    by_id = {m.id: m for m in messages}
    keys = list(where)
    kept, gone = await _out_of_view(session, where)
    run.entities = len(keys)
    run.in_context = kept / max(1, len(keys))
    view = json.dumps(await session.context_for_next_turn(format="text"), ensure_ascii=False)
    for kind, attr in (("path", "paths_in_context"), ("command", "commands_in_context")):
        of_kind = [k for k in keys if k[0] == kind]
        setattr(run, attr, sum(1 for k in of_kind if holds(view, k[1])) / max(1, len(of_kind)))
    rows, _ = await read_ledger(session.store, session.id)
    listed = {(e.kind, e.value) for r in rows for e in r.ledger.dropped}
    # A row past its per-kind listing cap names where the rest is: its removed messages,
    # or the summaries it merged.
    full = [r.ledger for r in rows if r.ledger.dropped_total > len(r.ledger.dropped)]
    capped = {i for ledger in full for i in ledger.removed_message_ids}
    merged = await session.store.get_summaries(
        sorted({i for ledger in full for i in ledger.removed_summary_ids})
    )
    in_ledger = sum(
        1
        for k in gone
        if k in listed
        or not where[k].isdisjoint(capped)
        or any(holds(s.content, k[1]) for s in merged)
    )
    run.in_ledger = in_ledger / max(1, len(gone))
    picked = gone[:: max(1, len(gone) // sample)][:sample]
    found = 0
    for key in picked:
        if await _grep_finds(session, by_id, key):
            found += 1
        else:
            run.grep_misses.append(key[1])
    run.grep_sample = len(picked)
    run.by_grep = found / max(1, len(picked))


def assistant_parts(turn: Turn, kind: str) -> list[MessagePart]:
    """The assistant message of ``turn`` as ``kind`` turns have it."""
    if kind == "tool":
        return list(turn.assistant)
    texts = [
        p.text if isinstance(p, TextPart) else f"Looking at the {p.tool_name} result: {p.output}"
        for p in turn.assistant
        if isinstance(p, TextPart | ToolPart)
    ]
    text = "\n\n".join(texts)
    if len(text) > CHAT_CHARS:  # cut at a word boundary: prose does not end mid-word
        text = text[: CHAT_CHARS + 1].rsplit(maxsplit=1)[0]
    return [TextPart(text=text)]


def depth_bound(leaves: int, fan_in: int) -> int:
    """``ceil(log_fan_in(leaves)) + 1`` (0 without leaves)."""
    if leaves <= 1:
        return leaves
    return math.ceil(math.log(leaves) / math.log(fan_in) - 1e-9) + 1


def _table(runs: list[WindowRun]) -> str:
    head = (
        "| window | turns | compactions /100 turns | summariser calls /100 turns | leaves | "
        "max depth (bound) | largest prompt / window | largest context / usable | "
        "cache reuse (one request) | runs per turn (max) | stop reasons |"
    )
    rows = [head, "|" + "---|" * 11]
    for r in runs:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(r.stop_reasons.items()))
        rows.append(
            f"| {r.window // 1000}k {r.kind} | {r.turns} | {r.per_100(r.compactions):.1f} | "
            f"{r.per_100(r.summariser_calls):.1f} | {r.leaves} | {r.max_depth} "
            f"({r.depth_bound}) | {r.max_prompt_tokens:,} / {r.window:,} | "
            f"{r.max_context_tokens:,} / {r.usable:,} | {r.cache_reuse:.1%} "
            f"({r.cache_reuse_one_request:.1%}) | "
            f"{r.max_runs_per_turn} | {reasons} |"
        )
    return "\n".join(rows)


def _min_mean(shares: list[float]) -> str:
    if not shares:
        return "-"
    return f"{min(shares):.1%} / {sum(shares) / len(shares):.1%}"


def _survival_table(runs: list[WindowRun]) -> str:
    head = (
        "| window | compactions | entities stored | in context at the end | paths in context | "
        "commands in context | out of context: found by one grep | out of context: in the "
        "ledger | in context after each compaction (min / mean) | out of context: found by "
        "one grep after each compaction (min / mean, sampled) | markers / text (KB) |"
    )
    rows = [head, "|" + "---|" * 11]
    for r in runs:
        rows.append(
            f"| {r.window // 1000}k {r.kind} | {r.compactions} | {r.entities:,} | "
            f"{r.in_context:.1%} | {r.paths_in_context:.1%} | {r.commands_in_context:.1%} | "
            f"{r.by_grep:.1%} (of {r.grep_sample}) | {r.in_ledger:.1%} | "
            f"{_min_mean(r.after_each_in_context)} | {_min_mean(r.after_each_by_grep)} "
            f"(of {r.after_each_sampled:,}) | {r.marker_bytes / 1000:,.0f} / "
            f"{r.text_bytes / 1000:,.0f} |"
        )
    return "\n".join(rows)


async def _run_all(turns: int, windows: list[int], kinds: list[str]) -> list[WindowRun]:
    runs = []
    with tempfile.TemporaryDirectory() as directory:
        for window in windows:
            for kind in kinds:
                runs.append(await run_window(window, kind, turns, directory))
    return runs


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table (or JSON)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS))
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("mnesis").setLevel(logging.ERROR)  # stop reasons are in the table
    windows = [int(w) for w in args.windows.split(",") if w]
    kinds = [k for k in args.kinds.split(",") if k]
    runs = asyncio.run(_run_all(args.turns, windows, kinds))
    if args.json:
        print(json.dumps([asdict(r) for r in runs], indent=2))
    else:
        print(_table(runs))
        print()
        print(_survival_table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
