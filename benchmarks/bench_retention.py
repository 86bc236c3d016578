"""Retention across compaction rounds: do summaries keep what matters, round after round?

    python -m benchmarks.bench_retention [--turns 5000] [--quick] [--markdown out.md]

The ``payments_migration`` story (as ``mnesis demo`` runs it, 32k window) with 40 facts
planted at regular turns, ten of each kind, each with a needle only it contains:

* *constraint*: a user instruction ("Never call the ledger from ... `LEDGER_GUARD_3`");
* *decision*: an assistant decision ("Decided to ... ``retry_budget_3`` ...");
* *path*: a file the assistant created (``payments/plugins/p3/hook_3.py``);
* *identifier*: a name the assistant introduced (``FxRateCache3``).

After every compaction run (a "round": one or more committed summaries) we measure,
over the facts planted so far:

* **in context**: the needle is in the assembled context (system prompt, summaries,
  messages), i.e. visible without any retrieval;
* **grep + expand**: ``grep`` for the needle finds a message that is raw in the context
  or covered by a summary in the context (so ``expand`` of that summary reaches it);
* **top tokens**: the largest summary in the context, in tokens (it must stay bounded).

Two summarisers: the offline extractive one (``compaction_model="extractive"``) and the
fake LLM (the session's fake model answers the Level 1 prompt with a word-truncating
echo, a stand-in for a model that keeps little).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace

from mnesis import MnesisConfig, MnesisSession, StorePool, TextPart
from mnesis.compaction.planner import CONDENSE_FAN_IN, plan_condense
from mnesis.config import CompactionConfig
from mnesis.events.bus import MnesisEvent
from mnesis.store.base import ContextItem
from mnesis.testing.conversations import DEMO, iter_turns

KINDS = ("constraint", "decision", "path", "identifier")
PER_KIND = 10


@dataclass(frozen=True, slots=True)
class Planted:
    """A planted fact: its kind, the turn it is planted after, its text and its needle."""

    kind: str
    turn: int
    role: str
    text: str
    needle: str


@dataclass(slots=True)
class Round:
    """One measurement after a compaction run."""

    turn: int
    planted: int
    in_context: int
    reachable: int
    top_tokens: int
    depth: int


@dataclass(slots=True)
class Series:
    """All rounds of one summariser."""

    name: str
    rounds: list[Round] = field(default_factory=list)


def planted_facts(turns: int) -> list[Planted]:
    """Ten facts of each kind, spread evenly over the first 90 % of the session."""
    facts = []
    count = PER_KIND * len(KINDS)
    for index in range(count):
        kind = KINDS[index % len(KINDS)]
        k = index // len(KINDS)
        turn = int((index + 1) * turns * 0.9 / count)
        if kind == "constraint":
            needle = f"LEDGER_GUARD_{k}"
            text = f"Never call the ledger from a webhook handler without `{needle}` set."
            facts.append(Planted(kind, turn, "user", text, needle))
        elif kind == "decision":
            needle = f"retry_budget_{k}"
            text = f"Decided to bound webhook retries with `{needle}` instead of a fixed count."
            facts.append(Planted(kind, turn, "assistant", text, needle))
        elif kind == "path":
            needle = f"payments/plugins/p{k}/hook_{k}.py"
            text = f"Created {needle} for the new settlement hook."
            facts.append(Planted(kind, turn, "assistant", text, needle))
        else:
            needle = f"FxRateCache{k}"
            text = f"The rates now go through `{needle}`, a small TTL cache."
            facts.append(Planted(kind, turn, "assistant", text, needle))
    return facts


def _config(db_path: str, extractive: bool) -> MnesisConfig:
    return MnesisConfig(
        store={"db_path": db_path},
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(
            compaction_model="extractive" if extractive else None,
            level2_enabled=False,
            compaction_output_budget=4_000,
            prune_protect_tokens=6_000,
            prune_minimum_tokens=3_000,
        ),
    )


async def _measure(session: MnesisSession, facts: list[Planted], turn: int) -> Round:
    built = await session.build_context()
    visible = built.system_prompt + "\n".join(str(m.content) for m in built.messages)
    items = await session.store.get_context_items(session.id)
    summaries = await session.store.get_summaries(
        [i.item_id for i in items if i.item_type == "summary"]
    )
    planted = [f for f in facts if f.turn <= turn]
    in_context = reachable = 0
    for fact in planted:
        if fact.needle in visible:
            in_context += 1
            reachable += 1
            continue
        found = await session.retrieval.grep(f'"{fact.needle}"', scope="messages", limit=5)
        if any(key != "uncovered" and ids for key, ids in found.groups.items()):
            reachable += 1
    return Round(
        turn=turn,
        planted=len(planted),
        in_context=in_context,
        reachable=reachable,
        top_tokens=max((s.token_count for s in summaries), default=0),
        depth=max((s.depth for s in summaries), default=0),
    )


async def run_series(name: str, turns: int, workdir: str, *, extractive: bool) -> Series:
    """Run one session of ``turns`` turns and measure after every compaction run."""
    series = Series(name)
    facts = planted_facts(turns)
    by_turn: dict[int, list[Planted]] = {}
    for fact in facts:
        by_turn.setdefault(fact.turn, []).append(fact)
    runs = 0

    def on_done(_: MnesisEvent, payload: dict[str, object]) -> None:
        nonlocal runs
        result = payload.get("result")
        if isinstance(result, dict) and result.get("level_used"):
            runs += 1

    pool = StorePool()
    db = os.path.join(workdir, f"{name}.db")
    session = await MnesisSession.create(
        model="fake/demo", config=_config(db, extractive), pool=pool
    )
    session.subscribe(MnesisEvent.COMPACTION_COMPLETED, on_done)
    try:
        seen = 0
        for index, turn in enumerate(iter_turns(dc_replace(DEMO, turns=turns, seed=1))):
            if turn.is_chat:
                await session.send(turn.user_text)
            else:
                await session.record(turn.user_text, list(turn.assistant))
            for fact in by_turn.get(index, []):
                reply = "Noted." if fact.role == "user" else fact.text
                user = fact.text if fact.role == "user" else "Go on with the settlement work."
                await session.record(user, [TextPart(text=reply)])
            await session.compaction_engine.wait_for_pending()
            if runs > seen:
                seen = runs
                series.rounds.append(await _measure(session, facts, index))
    finally:
        await session.close()
        await pool.close_all()
    return series


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def render(series: list[Series], rows: int = 10) -> str:
    """Markdown: sampled rounds per summariser, then the worst round of each."""
    lines = [
        "| summariser | round | turn | planted | in context | grep + expand | top summary "
        "tokens | DAG depth |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in series:
        step = max(1, len(s.rounds) // rows)
        picked = sorted({*range(0, len(s.rounds), step), len(s.rounds) - 1})
        for i in picked:
            r = s.rounds[i]
            lines.append(
                f"| {s.name} | {i + 1} | {r.turn} | {r.planted} | {_pct(r.in_context, r.planted)}"
                f" | {_pct(r.reachable, r.planted)} | {r.top_tokens} | {r.depth} |"
            )
    lines += [
        "",
        "| summariser | rounds | worst in context (4+ planted) | worst grep + "
        "expand | max top summary tokens |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in series:
        late = [r for r in s.rounds if r.planted >= 4] or s.rounds
        lines.append(
            f"| {s.name} | {len(s.rounds)} | "
            f"{min(r.in_context / r.planted for r in late):.0%} | "
            f"{min(r.reachable / r.planted for r in late):.0%} | "
            f"{max(r.top_tokens for r in s.rounds)} |"
        )
    return "\n".join(lines)


def simulated_depth(leaves: int, fan_in: int = CONDENSE_FAN_IN) -> tuple[int, int]:
    """The fast path for long histories: the planner's carries over ``leaves`` leaves.

    Leaves arrive one at a time and every full carry :func:`plan_condense` plans is
    applied, as the engine does when nothing presses (no store, no summariser).
    Returns ``(max depth, summaries left in the context)``.
    """
    depths: list[int] = []
    deepest = 0
    for _ in range(leaves):
        depths.append(0)
        while True:
            view = [ContextItem(i, "summary", f"sum_{i}", 1) for i in range(len(depths))]
            run = plan_condense(view, {f"sum_{i}": d for i, d in enumerate(depths)}, fan_in=fan_in)
            if not run:
                break
            first = run[0].position
            depths[first : first + len(run)] = [depths[first] + 1]
            deepest = max(deepest, depths[first])
    return deepest, len(depths)


async def main_async(turns: int) -> str:
    """Both series in a temporary directory; the Markdown tables."""
    with tempfile.TemporaryDirectory() as workdir:
        series = [
            await run_series("extractive", turns, workdir, extractive=True),
            await run_series("fake LLM", turns, workdir, extractive=False),
        ]
    return render(series)


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--quick", action="store_true", help="1,000 turns")
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument(
        "--depth-only",
        type=float,
        metavar="MESSAGES_PER_LEAF",
        help="only print the simulated DAG depth for 1k, 10k and 100k messages",
    )
    args = parser.parse_args()
    if args.depth_only:
        print("| messages | leaves | depth | summaries in context |\n|---:|---:|---:|---:|")
        for messages in (1_000, 10_000, 100_000):
            leaves = round(messages / args.depth_only)
            depth, left = simulated_depth(leaves)
            print(f"| {messages:,} | {leaves:,} | {depth} | {left} |")
        return
    table = asyncio.run(main_async(1_000 if args.quick else args.turns))
    print(table)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as out:
            out.write(table + "\n")


if __name__ == "__main__":
    main()
