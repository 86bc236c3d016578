"""Compaction benchmarks: cost per pass, catch-up, pruning, prompt-cache friendliness.

* Passes in steady state: a session whose store holds a long history (10k or
  100k messages) while its context holds only recent messages, as in a session
  that has been compacting all along. Each cycle appends 16 turns and calls
  ``session.compact()``; a tiny window makes every cycle run one leaf pass and
  one condensed pass. Pass cost must not depend on the history length.
* Catch-up: every message of a long session still in context (compaction was
  off), then one compaction run stopped after three leaf passes.
* Pruning: one prune pass over a long uncompacted session.
* Prefix: a long session with automatic compaction; the share of turns whose
  context starts with the previous turn's context unchanged (prompt caches hit).

Pass times come from wrapping the engine's ``_leaf_pass`` / ``_condense_pass``
on the instance: benchmark instrumentation only, nothing in ``src/`` changes.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.bench_session import (
    MODEL,
    SYSTEM_PROMPT,
    Report,
    SessionCache,
    Workload,
    build_history,
    copy_file,
    fmt_ms,
    median,
    p95,
    ratio,
)
from mnesis import (
    CompactionConfig,
    CompactionResult,
    FakeLLM,
    MnesisConfig,
    MnesisSession,
    StorePool,
)
from mnesis.compaction.engine import CompactionEngine
from mnesis.compaction.pruner import ToolOutputPruner
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["bench_compaction", "bench_prefix"]

_MODELS: tuple[tuple[str, str | None], ...] = (
    ("FakeLLM (instant)", None),
    ("extractive", "extractive"),
)


@dataclass(slots=True)
class _PassTimer:
    """Times every leaf and condensed pass of one engine (wraps the bound methods)."""

    leaf: list[float] = field(default_factory=list)
    condensed: list[float] = field(default_factory=list)
    leaf_success: int = 0
    condensed_success: int = 0
    stop_after_leaves: int | None = None
    """Set :attr:`abort` once this many leaf passes made progress."""
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    installed: bool = False

    def install(self, engine: CompactionEngine) -> None:
        leaf = getattr(engine, "_leaf_pass", None)
        condense = getattr(engine, "_condense_pass", None)
        if leaf is None or condense is None:
            return  # the engine changed shape: only whole-run numbers are reported
        self.installed = True

        async def timed_leaf(*args: Any, **kwargs: Any) -> bool:
            started = time.perf_counter()
            progressed = bool(await leaf(*args, **kwargs))
            if progressed:
                self.leaf.append(time.perf_counter() - started)
                self.leaf_success += 1
                if self.stop_after_leaves and self.leaf_success >= self.stop_after_leaves:
                    self.abort.set()
            return progressed

        async def timed_condense(*args: Any, **kwargs: Any) -> bool:
            started = time.perf_counter()
            progressed = bool(await condense(*args, **kwargs))
            if progressed:
                self.condensed.append(time.perf_counter() - started)
                self.condensed_success += 1
            return progressed

        setattr(engine, "_leaf_pass", timed_leaf)  # noqa: B010 (instance-level wrapper)
        setattr(engine, "_condense_pass", timed_condense)  # noqa: B010

    def spent(self) -> float:
        return sum(self.leaf) + sum(self.condensed)


def _config(
    compaction_model: str | None, *, window: int | None = None, **compaction: Any
) -> MnesisConfig:
    overrides = None
    if window is not None:
        overrides = {"context_limit": window, "max_output_tokens": window // 8}
    return MnesisConfig(
        model_overrides=overrides,
        compaction=CompactionConfig(auto=False, compaction_model=compaction_model, **compaction),
    )


async def _open(path: str, pool: StorePool, config: MnesisConfig) -> MnesisSession:
    return await MnesisSession.create(
        model=MODEL, config=config, db_path=path, pool=pool, llm=FakeLLM()
    )


# -- 3a. passes in steady state ---------------------------------------------------------
_KEEP_IN_CONTEXT = 64
_TURNS_PER_CYCLE = 16


async def _steady_db(workdir: str, history: int) -> tuple[str, str]:
    """A database with ``history`` messages of which only the last 64 are in context."""
    path = os.path.join(workdir, f"steady-{history}.db")
    pool = StorePool()
    try:
        session = await _open(path, pool, _config(None))
        await build_history(session, Workload(), history, out_of_context=history - _KEEP_IN_CONTEXT)
        session_id = session.id
        await session.close()
    finally:
        await pool.close_all()
    return path, session_id


async def _steady_run(
    path: str, session_id: str, history: int, model: str | None, cycles: int
) -> tuple[_PassTimer, list[float], list[CompactionResult]]:
    # An 8k window: the fresh tail alone is over the drain target, so each cycle
    # summarises the new turns (leaf) and then merges adjacent summaries (condensed).
    config = _config(model, window=8_000, compaction_output_budget=1_000)
    pool = StorePool()
    timer = _PassTimer()
    elapsed: list[float] = []
    results: list[CompactionResult] = []
    try:
        session = await MnesisSession.load(
            session_id, config=config, db_path=path, pool=pool, llm=FakeLLM()
        )
        timer.install(session.compaction_engine)
        workload = Workload()
        first_turn = history // 2
        for cycle in range(cycles):
            await build_history(
                session,
                workload,
                2 * _TURNS_PER_CYCLE,
                first_turn=first_turn + cycle * _TURNS_PER_CYCLE,
            )
            before = timer.spent()
            result = await session.compact()
            if result.error:
                raise RuntimeError(f"compaction failed: {result.error}")
            results.append(result)
            elapsed.append(result.elapsed_ms / 1e3 - (timer.spent() - before))
        await session.close()
    finally:
        await pool.close_all()
    return timer, elapsed, results


async def _bench_steady(workdir: str, quick: bool) -> Report:
    sizes = (2_000, 10_000) if quick else (10_000, 100_000)
    cycles = 4 if quick else 20
    report = Report(
        "3a. Compaction passes in steady state, by history length (ms per pass)",
        [
            "compaction model",
            "history",
            "leaf passes",
            "leaf p50",
            "leaf p95",
            "condensed passes",
            "condensed p50",
            "condensed p95",
            "rest of compact() p50",
            "leaf vs smallest",
            "condensed vs smallest",
        ],
    )
    dbs = {size: await _steady_db(workdir, size) for size in sizes}
    for label, model in _MODELS:
        base_leaf = base_condensed = 0.0
        for size in sizes:
            source, session_id = dbs[size]
            path = os.path.join(workdir, f"steady-{size}-{model or 'fake'}.db")
            await asyncio.to_thread(copy_file, source, path)
            timer, rest, _ = await _steady_run(path, session_id, size, model, cycles)
            leaf, condensed = median(timer.leaf), median(timer.condensed)
            base_leaf = base_leaf or leaf
            base_condensed = base_condensed or condensed
            report.rows.append(
                [
                    label,
                    f"{size:,}",
                    str(len(timer.leaf)),
                    fmt_ms(leaf),
                    fmt_ms(p95(timer.leaf)),
                    str(len(timer.condensed)),
                    fmt_ms(condensed),
                    fmt_ms(p95(timer.condensed)),
                    fmt_ms(median(rest)),
                    ratio(leaf, base_leaf),
                    ratio(condensed, base_condensed),
                ]
            )
            os.remove(path)
    report.notes.append(
        f"Goal: pass cost independent of history. The store holds `history` messages, the "
        f"context the last {_KEEP_IN_CONTEXT} (older ones stand for history compacted "
        f"earlier); {cycles} cycles of +{_TURNS_PER_CYCLE} turns then session.compact(), in "
        "an 8k window (each cycle: a leaf pass over ~12k tokens, then a condensed pass). "
        "rest = compact() time outside the passes (prune scan, lock, context reads). "
        "p95 includes SQLite's WAL auto-checkpoints, which run inside whichever commit "
        "crosses 1,000 pages."
    )
    return report


# -- 3b. catch-up ----------------------------------------------------------------------
async def _bench_catch_up(cache: SessionCache, workdir: str, quick: bool) -> Report:
    sizes = (1_000, 5_000) if quick else (10_000, 100_000)
    passes = 3
    report = Report(
        f"3b. Catch-up: every message in context, one compaction run (first {passes} leaf "
        "passes, prune off; 200k window)",
        [
            "compaction model",
            "in context",
            "leaf passes",
            "messages / pass",
            "leaf p50 ms",
            "leaf p95 ms",
            "µs / summarised message",
            "leaf vs smallest",
        ],
    )
    for label, model in _MODELS:
        base = 0.0
        for size in sizes:
            path, session_id = await cache.copy_of(size, f"catchup-{size}")
            config = _config(model, prune=False)
            pool = StorePool()
            timer = _PassTimer(stop_after_leaves=passes)
            try:
                session = await MnesisSession.load(
                    session_id, config=config, db_path=path, pool=pool, llm=FakeLLM()
                )
                timer.install(session.compaction_engine)
                result = await session.compaction_engine.run_compaction(
                    session_id, timer.abort, force=True
                )
                await session.close()
            finally:
                await pool.close_all()
            os.remove(path)
            if result.error:
                raise RuntimeError(f"compaction failed: {result.error}")
            per_pass = result.compacted_message_count / max(1, result.rounds)
            leaf = median(timer.leaf)
            base = base or leaf
            report.rows.append(
                [
                    label,
                    f"{size:,}",
                    str(result.rounds),
                    f"{per_pass:,.0f}",
                    fmt_ms(leaf),
                    fmt_ms(p95(timer.leaf)),
                    f"{sum(timer.leaf) / max(1, result.compacted_message_count) * 1e6:,.0f}",
                    ratio(leaf, base),
                ]
            )
    report.notes.append(
        "A leaf span is max(12k tokens, excess / rounds left), capped at 75% of the "
        "summarising model's window (200k for FakeLLM; no cap for extractive)."
    )
    return report


# -- 3c. pruning -------------------------------------------------------------------------
async def _bench_prune(cache: SessionCache, quick: bool) -> Report:
    sizes = (5_000,) if quick else (10_000,)
    report = Report(
        "3c. Prune pass over an uncompacted session (default protect window)",
        ["in context", "tombstones", "pruned tokens", "total s", "µs / tombstone"],
    )
    for size in sizes:
        path, session_id = await cache.copy_of(size, f"prune-{size}")
        pool = StorePool()
        try:
            session = await MnesisSession.load(
                session_id, config=_config(None), db_path=path, pool=pool, llm=FakeLLM()
            )
            pruner = ToolOutputPruner(
                session.store, TokenEstimator(session.model_info.encoding), session.config
            )
            started = time.perf_counter()
            pruned = await pruner.prune(session_id)
            seconds = time.perf_counter() - started
            await session.close()
        finally:
            await pool.close_all()
        os.remove(path)
        report.rows.append(
            [
                f"{size:,}",
                f"{pruned.pruned_count:,}",
                f"{pruned.pruned_tokens:,}",
                f"{seconds:.2f}",
                f"{seconds / max(1, pruned.pruned_count) * 1e6:,.0f}",
            ]
        )
    report.notes.append(
        "In a session that compacts as it goes a prune pass finds a few outputs; this is "
        "the worst case of compacting a long session for the first time."
    )
    return report


async def bench_compaction(cache: SessionCache, workdir: str, *, quick: bool) -> list[Report]:
    """Compaction cost: passes in steady state, catch-up, pruning."""
    return [
        await _bench_steady(workdir, quick),
        await _bench_catch_up(cache, workdir, quick),
        await _bench_prune(cache, quick),
    ]


# -- 4. prompt-cache friendliness ----------------------------------------------------------
@dataclass(slots=True)
class _PrefixStats:
    turns: int = 0
    kept: int = 0
    compactions: int = 0
    breaks_at_compaction: int = 0
    breaks_without_compaction: int = 0
    build: list[float] = field(default_factory=list)
    context_messages: list[int] = field(default_factory=list)


async def _prefix_run(path: str, workload: Workload, turns: int) -> _PrefixStats:
    config = MnesisConfig(
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(compaction_output_budget=4_000),
    )
    stats = _PrefixStats()
    pool = StorePool()
    try:
        session = await _open(path, pool, config)
        engine = session.compaction_engine
        previous: list[dict[str, Any]] | None = None
        last = engine.last_result
        for turn in range(turns):
            now = int(time.time() * 1000)
            await session.record(workload.user_text(turn), workload.assistant_parts(turn, now))
            # Between two turns a real agent waits for the model, so a background
            # compaction has finished; wait for it to make the run deterministic.
            await engine.wait_for_pending()
            started = time.perf_counter()
            context = await session.context_for_next_turn(SYSTEM_PROMPT)
            stats.build.append(time.perf_counter() - started)
            stats.context_messages.append(len(context))
            compacted = engine.last_result is not last and _committed(engine.last_result)
            last = engine.last_result
            stats.compactions += compacted
            if previous is not None:
                stats.turns += 1
                if context[: len(previous)] == previous:
                    stats.kept += 1
                elif compacted:
                    stats.breaks_at_compaction += 1
                else:
                    stats.breaks_without_compaction += 1
            previous = context
        await session.close()
    finally:
        await pool.close_all()
    return stats


def _committed(result: CompactionResult | None) -> bool:
    return result is not None and bool(result.level_used or result.pruned_tool_outputs)


async def bench_prefix(workdir: str, *, quick: bool) -> Report:
    """Share of turns whose context extends the previous one (prefix property)."""
    turns = 150 if quick else 400
    report = Report(
        "4. Prompt-cache friendliness: context extends the previous turn's context "
        "(32k window, auto compaction)",
        [
            "workload",
            "turns",
            "compactions",
            "prefix kept",
            "breaks at compaction",
            "other breaks",
            "context msgs p50",
            "build p50 ms",
            "build p95 ms",
        ],
    )
    workloads: list[tuple[str, Workload]] = [
        ("agent turns (~2 KB tool output)", Workload()),
        ("chat turns (text only)", Workload(tool_output_chars=0)),
    ]
    for label, workload in workloads:
        path = os.path.join(workdir, f"prefix-{len(report.rows)}.db")
        stats = await _prefix_run(path, workload, turns)
        share = stats.kept / max(1, stats.turns)
        report.rows.append(
            [
                label,
                str(stats.turns),
                str(stats.compactions),
                f"{share:.1%}",
                str(stats.breaks_at_compaction),
                str(stats.breaks_without_compaction),
                f"{median([float(n) for n in stats.context_messages]):.0f}",
                fmt_ms(median(stats.build)),
                fmt_ms(p95(stats.build)),
            ]
        )
    report.notes.append(
        "Goal: prefix kept >= 90%. A turn keeps the prefix when its context (system prompt "
        "included) starts with the previous turn's context unchanged. Background compaction "
        "is awaited after each turn. compaction_output_budget=4000, other settings default."
    )
    return report
