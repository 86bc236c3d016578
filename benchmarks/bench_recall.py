"""Conversational recall: does ``grep`` find the turn that answers a question?

    python -m benchmarks.bench_recall                 # 10k and 100k messages
    python -m benchmarks.bench_recall --sizes 10000   # one size
    python -m benchmarks.bench_recall --quick         # 2k messages (as in the tests)
    python -m benchmarks.bench_recall --sizes 1000000 --keep /tmp/recall  # build once, reuse
    python -m benchmarks.bench_recall --aged          # issue 28: old facts, 2k and 10k turns
    python -m benchmarks.bench_recall --aged --sizes 2000 10000 100000
    python -m benchmarks.bench_recall --aged --backend postgres [--dsn DSN] --sizes 10000

A harder benchmark than the planted facts of ``bench_retrieval``: one long session of
coding-agent and team chat (filler turns that reuse the same names, services and
words; long tool logs that repeat the query words; ``lcm_grep`` traces of earlier
searches) holds 300 questions in six kinds, 50 each, whose evidence is known:

* ``paraphrase``: the question words it differently ("children" for "kids");
* ``reply``: the evidence is the reply to the turn holding the question's words;
* ``temporal``: the same topic is settled differently on three days, the question
  names the weekday ("what did we decide on Tuesday about ...");
* ``multihop``: two turns, far apart, each holding half of the answer;
* ``toollog``: the evidence is one sentence, and tool logs repeat its words;
* ``coding``: paths, error messages, decisions of a coding agent.

For each ranking the benchmark reports evidence recall@1/5/10 (the share of a
question's evidence turns in the top k, averaged) and full-text latency p50/p95:

* ``before``: the ranking before issue 16 (all-words tier, then any-word tier, each
  in BM25 order, text and tool columns only, no hygiene);
* ``+graded``: the shipped candidate pool (coordination levels, newest matches per
  combination of terms) over text and tool columns only, hygiene, re-ranked by
  graded coordination;
* ``+context (grep)``: neighbour context (previous turns, speaker, date) indexed
  and used, and the replies of question turns (what ``grep`` ships).

``--aged`` runs the benchmark of issue 28 instead (``benchmarks/recall_aged.py``): facts
planted uniformly over a coding session, asked in words that are common in it, with
distractors and updated facts; recall@1/5/10 by the fact's age (third of the
history), by where it was planted, and for updates (the new value above the old).
``--backend postgres`` runs it on PostgreSQL (``--dsn``, ``MNESIS_BENCH_PG_DSN`` or a
throwaway cluster; see ``benchmarks/recall_pg.py``), with the server's CPU time per
call beside the client's (its median in the table, its mean and total below it); with
``--keep DIR`` that cluster lives in ``DIR/pg-cluster``
and the next run starts it again, its databases reused (1M: 47 minutes to build at load
7-11, 3.1 GB). A build prints its wall time,
the client's and the server's CPU time, the client's peak RSS and the load average.

``--keep DIR`` stores each database (and a ``.json`` with its questions) in DIR and
reuses it on later runs: 1M messages take about 15 minutes to build. ``--aged`` streams
its session to the store in batches (bounded memory), so ``--aged --sizes 1000000
--keep DIR`` builds the 1M file once (20 minutes at load 8-10 on 2 cores, 4.5 of them
CPU; about 100 MB of memory) and later runs only query it.
``--merge-index`` first merges the SQLite full-text index as the store's checkpoint
thread does in the background (``fts_merge``: bounded steps down to two segments or
fewer); ``--optimize-index`` merges it into one segment (FTS5 ``'optimize'``).
Latency is wall time per call; "CPU" is the process time of the call (every thread of
the process), which a loaded machine inflates far less than wall time. ``--floor``
also times the raw FTS5 ``MATCH`` of each question's terms with plain ``sqlite3``
(no store, no thread, no re-rank): the best ten by BM25 of any term, and the newest
40 rows holding any term.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import recall_aged, recall_pg
from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis.config import CompactionConfig
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, TextPart, ToolPart
from mnesis.retrieval.query import parse_query
from mnesis.retrieval.ranking import ranked_page
from mnesis.store.base import NewMessage, SearchFilter
from mnesis.store.immutable import ImmutableStore
from mnesis.store.search_query import SearchQuery
from mnesis.store.sqlite.fts_merge import MergeState, merge_step, segment_count
from mnesis.store.sqlite.search import render_fts5

DAY_MS = 86_400_000
START_MS = 1_767_571_200_000  # Monday 2026-01-05 00:00 UTC
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday"]
NAMES = (
    "Alice Bruno Chen Dana Emeka Farah Goran Hana Ivan Jules Kofi Lena Mateo Nadia Omar "
    "Priya Quinn Rosa Sven Tariq Uma Viktor Wen Xavier Yara Zeno Amara Bilal Carmen Dmitri "
    "Elif Femi Greta Hugo Ines Jonas Kira Luca Maya Nils Olga Pavel Rhea Sami Tomas Ugo "
    "Vera Wilma Yusuf Zora"
).split()
SERVICES = (
    "ledger billing payouts invoices refunds search gateway auth notifications reports "
    "scheduler exports webhooks catalog pricing inventory checkout shipping tax fraud "
    "analytics audit identity mailer storage"
).split()
TOPICS = [
    ("cache eviction policy", ["LRU", "LFU", "TTL only"]),
    ("release train cadence", ["weekly", "biweekly", "monthly"]),
    ("log retention window", ["7 days", "30 days", "90 days"]),
    ("database connection pool size", ["10", "25", "50"]),
    ("feature flag provider", ["Unleash", "LaunchDarkly", "a config file"]),
    ("error budget policy", ["freeze deploys", "page the owner", "open a ticket"]),
    ("API versioning scheme", ["URL prefix", "header", "date-based"]),
    ("test coverage gate", ["70%", "80%", "90%"]),
    ("on-call rotation length", ["one week", "two weeks", "three days"]),
    ("staging refresh schedule", ["nightly", "weekly", "on demand"]),
]
PARAPHRASES = [
    (
        "{n}'s kids start at the Riverside school in September",
        "which school will {n}'s children go to",
    ),
    ("{n} adopted a puppy named Biscuit last weekend", "what is the name of {n}'s new dog"),
    ("{n} is moving to Lisbon next spring", "which city is {n} relocating to"),
    ("{n} prefers to be reached on Signal after 6pm", "how should we contact {n} in the evening"),
    ("{n} broke a wrist while cycling and will type slowly", "why is {n} slow at typing"),
    ("{n}'s visa appointment got pushed to the 14th", "when is {n}'s visa interview now"),
    ("{n} is allergic to peanuts, no satay at the offsite", "what food allergy does {n} have"),
    ("{n} bought a used Volvo estate for the commute", "what car did {n} purchase"),
    ("{n} will be on parental leave from March", "when does {n}'s leave for the baby begin"),
    ("{n} finished the Berlin marathon in under four hours", "what race did {n} run"),
]
CODING = [
    (
        "Moved the retry decorator to src/{s}/util/retry.py so every client shares it.",
        "where did we put the {s} retry decorator",
    ),
    (
        "tests/{s}/test_api.py fails with KeyError: 'currency' raised in src/{s}/serialize.py.",
        "which error does the {s} api test fail with",
    ),
    (
        "Decided to replace requests with httpx in the {s} client for async support.",
        "what HTTP library did we choose for the {s} client",
    ),
    (
        "The {s} migration 0042_add_index must run before the backfill job.",
        "what has to happen before the {s} backfill",
    ),
    (
        "Pinned pydantic to 2.7 in {s} because 2.8 broke the settings loader.",
        "why is pydantic pinned in {s}",
    ),
]
FILLER = [
    "{n} joined the standup late, {s} is still on the agenda",
    "can someone review the {s} pull request when there is time",
    "{n} says the {s} dashboard looks fine today",
    "lunch order is in, {n} picked the noodle place again",
    "the {s} service deploy went out without issues",
    "reminder: retro for {s} on Thursday, {n} is hosting",
    "{n}, do you have the notes from the {s} sync",
    "I updated the README of {s} with the new setup steps",
    "the build for {s} is green again after the flaky test fix",
    "{n} is out today, ping me for anything about {s}",
    "we should talk about the {t} at some point",
    "the {t} came up in the planning meeting again",
    "ok, thanks",
    "sounds good to me",
    "let me check and get back to you",
]


@dataclass
class Question:
    kind: str
    text: str
    evidence: list[str] = field(default_factory=list)


@dataclass
class Corpus:
    messages: list[NewMessage] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


class Builder:
    """Appends turns (with timestamps that walk forward over working days)."""

    def __init__(self, session_id: str, total: int, rng: random.Random) -> None:
        self.session_id = session_id
        self.total = total
        self.rng = rng
        self.corpus = Corpus()

    def at(self, index: int) -> int:
        day = index * 20 // max(1, self.total)  # 20 working days over the session
        week, weekday = divmod(day, 5)
        return START_MS + (week * 7 + weekday) * DAY_MS + 9 * 3_600_000 + index * 1_000

    def add(self, role: str, parts: list[MessagePart], at: int | None = None) -> str:
        index = len(self.corpus.messages)
        message = Message(
            id=new_id("msg"),
            session_id=self.session_id,
            role=role,
            created_at=self.at(index) if at is None else at,
            token_estimate=60,
        )
        self.corpus.messages.append(NewMessage(message, parts, [50] * len(parts)))
        return message.id

    def say(self, role: str, text: str, at: int | None = None) -> str:
        return self.add(role, [TextPart(text=text)], at)

    def filler(self) -> None:
        rng = self.rng
        text = rng.choice(FILLER).format(
            n=rng.choice(NAMES), s=rng.choice(SERVICES), t=rng.choice(TOPICS)[0]
        )
        self.say("user" if len(self.corpus.messages) % 2 == 0 else "assistant", text)
        if rng.random() < 0.15:
            self.tool_log(rng.choice(SERVICES), rng.choice(["timeout", "cache", "retry"]))

    def tool_log(self, service: str, word: str) -> None:
        lines = [
            f"2026-01-0{self.rng.randint(5, 9)}T10:{i:02d} WARN {service} {word} {word} "
            f"exceeded, {word} again for request {self.rng.randint(1, 99999)}"
            for i in range(40)
        ]
        self.add(
            "assistant",
            [
                TextPart(text=f"Checking the {service} logs."),
                ToolPart(
                    tool_name="bash",
                    tool_call_id="call_" + new_id("part")[5:],
                    input={"command": f"kubectl logs deploy/{service} --tail 40"},
                    output="\n".join(lines),
                ),
            ],
        )

    def trace(self, query: str, echoed: str) -> None:
        """An earlier ``lcm_grep`` call whose input and output repeat a question's words."""
        self.add(
            "assistant",
            [
                ToolPart(
                    tool_name="lcm_grep",
                    tool_call_id="call_" + new_id("part")[5:],
                    input={"query": query},
                    output=f"1 match: {echoed} (msg_{self.rng.randint(10**9, 10**10)})",
                )
            ],
        )


def build(session_id: str, total: int, seed: int = 7) -> Corpus:
    """``total`` messages with 300 questions (50 of each kind) planted among filler."""
    rng = random.Random(seed)
    b = Builder(session_id, total, rng)
    plants: list[Callable[[], None]] = []
    names = NAMES[:]
    rng.shuffle(names)

    for i in range(50):
        fact, question = PARAPHRASES[i % len(PARAPHRASES)]
        name = names[i % len(names)]

        def plant_paraphrase(fact: str = fact, question: str = question, name: str = name) -> None:
            q = Question("paraphrase", question.format(n=name))
            q.evidence.append(b.say("user", fact.format(n=name)))
            b.say("assistant", "Noted, thanks for letting us know.")
            b.corpus.questions.append(q)

        plants.append(plant_paraphrase)

    for i in range(50):
        topic, options = TOPICS[i % len(TOPICS)]
        service = SERVICES[i % len(SERVICES)]

        def plant_reply(
            topic: str = topic, options: list[str] = options, service: str = service
        ) -> None:
            pick = rng.choice(options)
            q = Question("reply", f"what did we decide about the {service} {topic}")
            b.say("user", f"For {service}: should the {topic} be {' or '.join(options)}?")
            q.evidence.append(
                b.say("assistant", f"Let's go with {pick}; it is the least risky option now.")
            )
            b.corpus.questions.append(q)

        plants.append(plant_reply)

    for i in range(50):
        topic, options = TOPICS[i % len(TOPICS)]
        service = SERVICES[(i * 7) % len(SERVICES)]
        wanted = WEEKDAYS[i % 5]

        def plant_temporal(
            topic: str = topic,
            options: list[str] = options,
            service: str = service,
            wanted: str = wanted,
        ) -> None:
            q = Question("temporal", f"what did we decide on {wanted} about the {service} {topic}")
            base = b.at(len(b.corpus.messages))
            week_start = base - (base - START_MS) % (7 * DAY_MS)
            for offset, day in enumerate(WEEKDAYS[:5]):
                if day != wanted and rng.random() < 0.5:
                    continue
                when = week_start + WEEKDAYS.index(day) * DAY_MS + 15 * 3_600_000 + offset
                choice = options[offset % len(options)]
                said = b.say("user", f"{service} {topic}: we settle on {choice}", at=when)
                if day == wanted:
                    q.evidence.append(said)
            b.corpus.questions.append(q)

        plants.append(plant_temporal)

    for i in range(50):
        name = names[(i + 17) % len(names)]
        service = SERVICES[(i * 3) % len(SERVICES)]
        port = 9000 + i

        def plant_owner(name: str = name, service: str = service) -> Question:
            q = Question("multihop", f"which port does the service {name} owns listen on")
            q.evidence.append(b.say("user", f"{name} owns the {service} service from now on."))
            b.corpus.questions.append(q)
            return q

        holder: list[Question] = []

        def first(
            plant_owner: Callable[[], Question] = plant_owner, h: list[Question] = holder
        ) -> None:
            h.append(plant_owner())

        def second(service: str = service, port: int = port, h: list[Question] = holder) -> None:
            h[0].evidence.append(
                b.say("assistant", f"Configured the {service} service to listen on port {port}.")
            )

        plants.append(first)
        plants.append(second)

    for i in range(50):
        service = SERVICES[i % len(SERVICES)]
        word = ["timeout", "cache", "retry"][(i // len(SERVICES) + i) % 3]
        limit = 5 + i

        def plant_toollog(service: str = service, word: str = word, limit: int = limit) -> None:
            q = Question("toollog", f"what must the {service} {word} limit stay at")
            for _ in range(3):
                b.tool_log(service, word)
            q.evidence.append(
                b.say("user", f"Keep the {service} {word} limit at {limit}; ops depends on it.")
            )
            for _ in range(2):
                b.tool_log(service, word)
            b.trace(f"{service} {word} limit", f"the {service} {word} limit question")
            b.corpus.questions.append(q)

        plants.append(plant_toollog)

    for i in range(50):
        fact, question = CODING[i % len(CODING)]
        service = SERVICES[(i // 2) % len(SERVICES)]

        def plant_coding(
            fact: str = fact, question: str = question, service: str = service
        ) -> None:
            q = Question("coding", question.format(s=service))
            q.evidence.append(b.say("assistant", fact.format(s=service)))
            b.corpus.questions.append(q)

        plants.append(plant_coding)

    # Multi-hop halves stay in order (owner first); everything else is spread evenly.
    slots = sorted(rng.sample(range(total), len(plants)))
    order = list(range(len(plants)))
    rng.shuffle(order)
    # Keep each multi-hop pair's "first" before its "second".
    for index in range(len(plants)):
        if plants[index].__name__ == "second":
            a, c = order.index(index - 1), order.index(index)
            if a > c:
                order[a], order[c] = order[c], order[a]
    queue = [plants[i] for i in order]
    for slot in slots:
        while len(b.corpus.messages) < slot:
            b.filler()
        queue.pop(0)()
    while len(b.corpus.messages) < total:
        b.filler()
    return b.corpus


@dataclass
class Scores:
    at: dict[int, list[float]] = field(default_factory=lambda: {1: [], 5: [], 10: []})
    kinds: dict[str, list[float]] = field(default_factory=dict)
    millis: list[float] = field(default_factory=list)
    cpu_millis: list[float] = field(default_factory=list)


Ranker = Callable[[str], Awaitable[list[str]]]


def rankers(store: ImmutableStore, session_id: str, session: MnesisSession) -> dict[str, Ranker]:
    where = SearchFilter(session_ids=[session_id])

    async def before(query: str) -> list[str]:
        out: list[str] = []
        for tier in parse_query(query).tiers:
            for hit in await store.search_text(
                query=tier, scope="messages", where=where, limit=10 * 3 + 1
            ):
                if hit.id not in out:
                    out.append(hit.id)
            if len(out) >= 10:
                break
        return out[:10]

    def variant(context: bool, graded: bool) -> Ranker:
        async def run(query: str) -> list[str]:
            parsed = parse_query(query)
            page, _, _ = await ranked_page(
                store,
                parsed,
                ["messages"],
                where,
                10,
                {},
                exclude_ids=set(),
                include_traces=False,
                context=context,
                graded=graded,
            )
            return [r.hit.id for r in page]

        return run

    async def shipped(query: str) -> list[str]:
        found = await session.grep(query, scope="messages", limit=10)
        return [m.id for m in found.matches]

    return {
        "before": before,
        "+graded": variant(False, True),
        "+context (grep)": shipped,
    }


async def _open(path: str, total: int, pool: StorePool) -> tuple[MnesisSession, Corpus, float]:
    """The benchmark session at ``path``: reused when ``path`` and its ``.json`` sidecar
    (questions and evidence IDs) exist, built and stored otherwise."""
    config = MnesisConfig(compaction=CompactionConfig(auto=False))
    saved = _sidecar(path)
    if saved is not None:
        session = await MnesisSession.load(saved["session_id"], config, db_path=path, pool=pool)
        corpus = Corpus(questions=[Question(**q) for q in saved["questions"]])
        return session, corpus, float(saved["per_turn_ms"])
    session = await MnesisSession.create(model="fake/bench", db_path=path, pool=pool, config=config)
    corpus = build(session.id, total)
    started = time.perf_counter()
    for index in range(0, len(corpus.messages), 2_000):
        await session.store.append_messages(corpus.messages[index : index + 2_000])
    per_turn_ms = (time.perf_counter() - started) * 1000 / len(corpus.messages)
    saved = {
        "session_id": session.id,
        "per_turn_ms": per_turn_ms,
        "questions": [q.__dict__ for q in corpus.questions],
    }
    _sidecar(path, saved)
    corpus.messages = []
    return session, corpus, per_turn_ms


def _sidecar(path: str, saved: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Write ``saved`` next to the database, or read what was saved (if the database
    is there too)."""
    sidecar = Path(path + ".json")
    if saved is not None:
        sidecar.write_text(json.dumps(saved))
        return saved
    if sidecar.exists() and Path(path).exists():
        return dict(json.loads(sidecar.read_text()))
    return None


async def _build(path: str, total: int) -> None:
    pool = StorePool()
    session, _, _ = await _open(path, total, pool)
    await session.close()
    await pool.close_all()


def _merge(path: str) -> None:
    """Merge the full-text index as the checkpoint thread does, step by step."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        state = MergeState()
        while merge_step(conn, state):
            pass


def segments(path: str) -> int:
    """How many segments the message full-text index holds."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return segment_count(conn)


def _optimize(path: str) -> None:
    """Merge the full-text index's segments into one (appends leave a few dozen)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("INSERT INTO message_parts_fts (message_parts_fts) VALUES ('optimize')")
        conn.commit()


async def score(rank: Callable[[str], Awaitable[list[str]]], questions: Sequence[Any]) -> Scores:
    """Evidence recall@1/5/10, recall@5 per question kind and latency of ``rank``."""
    scores = Scores()
    for question in questions:
        t, cpu = time.perf_counter(), time.process_time()
        ids = await rank(question.text)
        scores.millis.append((time.perf_counter() - t) * 1000)
        scores.cpu_millis.append((time.process_time() - cpu) * 1000)
        for k in (1, 5, 10):
            top = set(ids[:k])
            share = sum(e in top for e in question.evidence) / len(question.evidence)
            scores.at[k].append(share)
            if k == 5:
                scores.kinds.setdefault(question.kind, []).append(share)
    return scores


async def evaluate(
    path: str, total: int, only: list[str] | None = None
) -> tuple[dict[str, Scores], float]:
    """Recall and latency of each ranking over the benchmark session at ``path``."""
    pool = StorePool()
    session, corpus, per_turn_ms = await _open(path, total, pool)
    results: dict[str, Scores] = {}
    for name, rank in rankers(session.store, session.id, session).items():
        if only and name not in only:
            continue
        results[name] = await score(rank, corpus.questions)
    await session.close()
    await pool.close_all()
    return results, per_turn_ms


FLOOR_SQL = {
    "raw FTS5: BM25 top 10, any term": "SELECT rowid FROM message_parts_fts "
    "WHERE message_parts_fts MATCH ? ORDER BY rank LIMIT 10",
    "raw FTS5: newest 40, any term": "SELECT rowid FROM message_parts_fts "
    "WHERE message_parts_fts MATCH ? ORDER BY rowid DESC LIMIT 40",
}


def floor(path: str) -> dict[str, Scores]:
    """Latency of the raw FTS5 ``MATCH`` of each question's terms (see ``FLOOR_SQL``)."""
    saved = _sidecar(path)
    assert saved is not None, "build the database first (--keep)"
    results: dict[str, Scores] = {}
    with contextlib.closing(sqlite3.connect(path)) as conn:
        for name, sql in FLOOR_SQL.items():
            scores = results[name] = Scores()
            for question in saved["questions"]:
                parsed = parse_query(question["text"])
                match = render_fts5(
                    SearchQuery(all_of=tuple(parsed.required), any_of=tuple(parsed.optional))
                )
                t, cpu = time.perf_counter(), time.process_time()
                conn.execute(sql, (match,)).fetchall()
                scores.millis.append((time.perf_counter() - t) * 1000)
                scores.cpu_millis.append((time.process_time() - cpu) * 1000)
    return results


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(total: int, results: dict[str, Scores], per_turn_ms: float, index_segments: int) -> None:
    print(
        f"\n## {total:,} messages ({per_turn_ms:.3f} ms per stored message, index included; "
        f"{index_segments} full-text index segments)\n"
    )
    kinds = sorted(next(iter(results.values())).kinds)
    print(
        "| ranking | R@1 | R@5 | R@10 | R@5 even / odd | p50 ms | p95 ms | CPU p50 ms | "
        + " | ".join(f"R@5 {k}" for k in kinds)
        + " |"
    )
    print("|---|---|---|---|---|---|---|---|" + "---|" * len(kinds))
    for name, s in results.items():
        if not s.at[1]:
            # A latency floor: no ranking to score.
            cells = ["", "", "", ""] + [f"{_pct(s.millis, q):.1f}" for q in (0.5, 0.95)]
            cells.append(f"{_pct(s.cpu_millis, 0.5):.1f}")
            print(f"| {name} | " + " | ".join(cells) + " |" + " |" * len(kinds))
            continue
        cells = [f"{statistics.mean(s.at[k]):.3f}" for k in (1, 5, 10)]
        # Even questions are the reduced run of the tests; odd ones were never tuned on.
        cells.append(f"{statistics.mean(s.at[5][::2]):.3f} / {statistics.mean(s.at[5][1::2]):.3f}")
        cells += [f"{_pct(s.millis, q):.1f}" for q in (0.5, 0.95)]
        cells.append(f"{_pct(s.cpu_millis, 0.5):.1f}")
        cells += [f"{statistics.mean(s.kinds[k]):.2f}" for k in kinds]
        print(f"| {name} | " + " | ".join(cells) + " |")


def aged_rankers(session: MnesisSession) -> dict[str, Ranker]:
    """The previous candidate pool (newest matches per combination of terms) and
    ``grep`` as shipped, both on the lexical path."""
    where = SearchFilter(session_ids=[session.id])

    async def previous(query: str) -> list[str]:
        page, _, _ = await ranked_page(
            session.store,
            parse_query(query),
            ["messages"],
            where,
            10,
            {},
            exclude_ids=set(),
            include_traces=False,
            relevance=False,
        )
        return [r.hit.id for r in page]

    async def shipped(query: str) -> list[str]:
        found = await session.grep(query, scope="messages", limit=10)
        return [m.id for m in found.matches]

    return {"previous": previous, "grep": shipped}


async def aged(
    path: str,
    total: int,
    only: list[str] | None,
    merge: bool = False,
    *,
    sidecar: str | None = None,
    server: recall_pg.ServerCpu | None = None,
) -> None:
    """Issue 28's benchmark at ``total`` turns, on the SQLite file ``path`` or the
    PostgreSQL database ``path`` names (reused when its ``sidecar``, the questions
    file, says it holds the session; ``path + ".json"`` on SQLite). ``server``: the
    PostgreSQL server's CPU time, reported beside the client's."""
    pool = StorePool()
    config = MnesisConfig(compaction=CompactionConfig(auto=False))
    postgres = path.startswith("postgresql://")
    sidecar = sidecar or path + ".json"
    saved = _saved_questions(sidecar, None if postgres else path)
    if saved is not None:
        session = await MnesisSession.load(saved["session_id"], config, db_path=path, pool=pool)
        questions = [recall_aged.AgedQuestion(**q) for q in saved["questions"]]
    else:
        if not postgres:
            # A build cut short leaves a file without its questions: start it anew.
            for stale in (path, path + "-wal", path + "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(stale)
        session = await MnesisSession.create(
            model="fake/bench", db_path=path, pool=pool, config=config
        )
        started, cpu = time.perf_counter(), time.process_time()
        used = server.seconds() if server is not None else 0.0
        questions = await _stream_aged(session.store, session.id, total)
        print(
            f"built {total:,} turns in {time.perf_counter() - started:.0f} s, client CPU "
            f"{time.process_time() - cpu:.0f} s"
            + (f", server CPU {server.seconds() - used:.0f} s" if server is not None else "")
            + f", max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB, "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        if postgres:
            await session.close()
            used = server.seconds() if server is not None else 0.0
            print(
                f"VACUUM ANALYZE in {recall_pg.vacuum_analyze(path):.0f} s"
                + (f", server CPU {server.seconds() - used:.0f} s" if server else ""),
                flush=True,
            )
            session = await MnesisSession.load(session.id, config, db_path=path, pool=pool)
        _save_questions(sidecar, session.id, questions)
    if merge and not postgres:
        await session.close()
        _merge(path)
        session = await MnesisSession.load(session.id, config, db_path=path, pool=pool)
    results: dict[str, recall_aged.AgedScores] = {}
    server_millis: dict[str, list[float]] = {}
    loads: list[float] = []
    for name, rank in aged_rankers(session).items():
        if only and name not in only:
            continue
        scores = results[name] = recall_aged.AgedScores()
        spent = server_millis[name] = []
        loads.append(os.getloadavg()[0])
        for question in questions:
            used = server.seconds() if server is not None else 0.0
            started, cpu = time.perf_counter(), time.process_time()
            ranked = await rank(question.text)
            scores.millis.append((time.perf_counter() - started) * 1000)
            scores.cpu_millis.append((time.process_time() - cpu) * 1000)
            if server is not None:
                spent.append((server.seconds() - used) * 1000)
            recall_aged.score_question(scores, ranked, question, total)
        loads.append(os.getloadavg()[0])
    await session.close()
    await pool.close_all()
    where = "PostgreSQL" if postgres else f"SQLite, {segments(path)} index segments"
    print(
        f"\n## {total:,} turns, {len(questions)} questions, {where}, "
        f"load average {min(loads):.1f}-{max(loads):.1f}\n"
    )
    server_column = " server CPU p50 ms |" if server is not None else ""
    print(
        "| ranking | "
        + " | ".join(recall_aged.ROWS)
        + " | p50 ms | p95 ms | CPU p50 ms | CPU p95 ms |"
        + server_column
    )
    print("|---|" + "---|" * (len(recall_aged.ROWS) + 4 + (server is not None)))
    for name, s in results.items():
        cells = []
        for row in recall_aged.ROWS:
            cell = s.cells.get(row)
            cells.append(
                "/".join(f"{statistics.mean(cell[k]):.2f}" for k in (1, 5, 10)) if cell else ""
            )
        cells += [f"{_pct(s.millis, q):.1f}" for q in (0.5, 0.95)]
        cells += [f"{_pct(s.cpu_millis, q):.1f}" for q in (0.5, 0.95)]
        if server is not None:
            # Clock ticks: the resolution is 10 ms, the median of many calls is finer.
            cells.append(f"{statistics.median(server_millis[name]):.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(
        "\ncells: recall@1/@5/@10; update: the new value in the top k and above the old one; "
        "CPU: the client process (both threads)"
        + ("; server CPU: the PostgreSQL processes (10 ms ticks)" if server is not None else "")
    )
    for name, spent in server_millis.items():
        # The mean and the total see a change smaller than a tick, the median does not.
        print(
            f"{name}: server CPU mean {statistics.mean(spent):.1f} ms per call, "
            f"{sum(spent) / 1000:.2f} s in all; client CPU mean "
            f"{statistics.mean(results[name].cpu_millis):.1f} ms"
        )


async def _stream_aged(
    store: ImmutableStore, session_id: str, total: int
) -> list[recall_aged.AgedQuestion]:
    """Append the aged session of ``total`` turns batch by batch through the import
    path (``append_batch``: one transaction and one ``executemany`` per table each),
    the next batch generated while the store's thread writes the last one; memory
    stays bounded at any size. Returns its questions."""
    corpus = recall_aged.AgedCorpus(total)
    writing: asyncio.Future[Any] | None = None
    for batch in recall_aged.stream(corpus, session_id, batch=_AGED_BATCH):
        if writing is not None:
            await writing
        writing = asyncio.ensure_future(store.append_batch(batch))
        await asyncio.sleep(0)  # the write starts on the store's thread
    if writing is not None:
        await writing
    return corpus.questions


_AGED_BATCH = 5_000
"""Turns per transaction when building the aged session."""


def _saved_questions(sidecar: str, database: str | None) -> dict[str, Any] | None:
    """What ``_save_questions`` wrote, when there (and the SQLite ``database`` too)."""
    if not Path(sidecar).exists() or (database is not None and not Path(database).exists()):
        return None
    return dict(json.loads(Path(sidecar).read_text()))


def _save_questions(
    sidecar: str, session_id: str, questions: list[recall_aged.AgedQuestion]
) -> None:
    Path(sidecar).write_text(
        json.dumps({"session_id": session_id, "questions": [q.__dict__ for q in questions]})
    )


def _pg_database(dsn: str, total: int, sidecar: str, keep: bool) -> str:
    """The database of ``total`` turns: kept from an earlier run (``keep`` and its
    questions file there), else new (an old questions file removed)."""
    url, reused = recall_pg.aged_database(dsn, total, reuse=keep and os.path.exists(sidecar))
    if not reused and os.path.exists(sidecar):
        os.remove(sidecar)
    return url


async def _aged_postgres(
    sizes: list[int], only: list[str] | None, dsn: str | None, keep: str | None
) -> None:
    """``--aged --backend postgres``: each size in its own database (see ``recall_pg``)."""
    with (
        recall_pg.pg_server(dsn, keep) as (server_dsn, server),
        tempfile.TemporaryDirectory() as tmp,
    ):
        for total in sizes:
            sidecar = os.path.join(keep or tmp, f"aged-{total}.pg.json")
            url = _pg_database(server_dsn, total, sidecar, keep is not None)
            try:
                await aged(url, total, only, sidecar=sidecar, server=server)
            finally:
                if keep is None:
                    recall_pg.drop_database(server_dsn, url)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="*", help="turns (default: 10k and 100k; --aged: 2k and 10k)"
    )
    parser.add_argument("--quick", action="store_true", help="2k messages only")
    parser.add_argument("--only", nargs="*", help="rankings to run (default: all)")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time the raw FTS5 MATCH of each question's terms with plain sqlite3",
    )
    parser.add_argument(
        "--merge-index",
        action="store_true",
        help="merge the SQLite full-text index first, as the store does in the background",
    )
    parser.add_argument(
        "--optimize-index",
        action="store_true",
        help="merge the SQLite full-text index into one segment first (FTS5 'optimize')",
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="store the databases in DIR and reuse them on later runs (1M takes long to build)",
    )
    parser.add_argument("--aged", action="store_true", help="issue 28's benchmark (old facts)")
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="with --aged: the store (postgres: --dsn, else a throwaway cluster)",
    )
    parser.add_argument(
        "--dsn", help="with --backend postgres: the server (default: MNESIS_BENCH_PG_DSN)"
    )
    args = parser.parse_args()
    sizes = [2_000] if args.quick else args.sizes or [10_000, 100_000]
    if args.aged:
        sizes = args.sizes or ([2_000] if args.quick else [2_000, 10_000])
        if args.backend == "postgres":
            await _aged_postgres(sizes, args.only, args.dsn, args.keep)
            return
        with tempfile.TemporaryDirectory() as tmp:
            for total in sizes:
                path = os.path.join(args.keep or tmp, f"aged-{total}.db")
                await aged(path, total, args.only, args.merge_index)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for total in sizes:
            path = os.path.join(args.keep or tmp, f"recall-{total}.db")
            if args.optimize_index or args.merge_index:
                await _build(path, total)
                (_optimize if args.optimize_index else _merge)(path)
            results, per_turn = await evaluate(path, total, args.only)
            if args.floor:
                results.update(floor(path))
            report(total, results, per_turn, segments(path))


if __name__ == "__main__":
    asyncio.run(main())
