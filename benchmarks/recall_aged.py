"""A long coding session with old facts asked in common words (issue 28).

``build(session_id, total, seed)`` generates, deterministically, ``total`` turns of a
coding agent's session: user and assistant chat, tool calls with long outputs
(pytest runs, logs, config dumps), and ``FACTS`` facts planted uniformly over the
history, a third each in user text, assistant text and tool output. Each fact is
asked as a paraphrased question whose only words shared with the fact are common in
the session (components, "port", "API", "cache", ...). What makes it hard:

* filler turns and tool logs use the same words all the time, so the question's
  words match thousands of turns;
* for each fact, ``DISTRACTORS`` turns hold all but one of the shared words (the
  port is in use, the API client, ...), anywhere in the session;
* ``UPDATES`` facts are stated twice, an old value then, later, a new one; their
  question asks for the current value (the newer turn must rank above the older).

Every fact's question is answered by exactly one turn (for an update, by the newer
turn). :func:`age_band` says in which third of the history a fact was planted.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, TextPart, ToolPart
from mnesis.store.base import NewMessage

__all__ = ["FACTS", "UPDATES", "AgedCorpus", "AgedQuestion", "age_band", "build", "stream"]

FACTS = 90
"""Facts planted once (30 in user text, 30 in assistant text, 30 in tool output)."""
UPDATES = 30
"""Facts stated twice, an old value then a new one."""
DISTRACTORS = 3
"""Turns per fact holding all but one of the words its question shares with it."""
START_MS = 1_767_571_200_000  # Monday 2026-01-05 00:00 UTC
COMPONENTS = (
    "billing auth search payments gateway scheduler reports notifications inventory "
    "checkout ledger exports"
).split()

# (fact, question, shared words, update, update question): {c} a component, {v} a value.
# The shared words are those of the question that the fact holds too (as the index
# stems them), every one common in the filler below.
TEMPLATES: list[tuple[str, str, tuple[str, ...], str, str]] = [
    (
        "We agreed the public {c} API will listen on port {v} from now on.",
        "which port did we settle on for the {c} API?",
        ("port", "api"),
        "Heads-up: the {c} API moves to port {v} starting today.",
        "which port does the {c} API use now?",
    ),
    (
        "the staging database password for {c} rotates every {v} days",
        "how often does the staging DB password of {c} get rotated?",
        ("staging", "password"),
        "security changed it: the staging database password for {c} rotates every {v} days",
        "how often is the {c} staging DB password rotated these days?",
    ),
    (
        "{c} retries a failed webhook {v} times before giving up",
        "how many times do we retry a failed {c} webhook?",
        ("retry", "webhook"),
        "we bumped it: {c} now retries a failed webhook {v} times",
        "how many webhook retries does {c} currently do?",
    ),
    (
        "the {c} worker pool runs {v} threads in production",
        "how many threads does the {c} worker pool get in prod?",
        ("worker", "pool", "threads"),
        "after the load test the {c} worker pool runs {v} threads in production",
        "what is the current thread count of the {c} worker pool in prod?",
    ),
    (
        "{c} cache entries expire after {v} minutes",
        "when do {c} cache entries time out?",
        ("cache", "entries"),
        "new setting: {c} cache entries expire after {v} minutes",
        "how long do {c} cache entries live now?",
    ),
    (
        "the {c} release branch is cut every {v} weeks",
        "how often do we create the {c} release branch?",
        ("release", "branch"),
        "from this sprint the {c} release branch is cut every {v} weeks",
        "what is the latest cadence of the {c} release branch?",
    ),
    (
        "the upstream timeout of {c} is {v} seconds",
        "what timeout does {c} use for upstream calls?",
        ("timeout", "upstream"),
        "raised the upstream timeout of {c} to {v} seconds",
        "what is the {c} upstream timeout now?",
    ),
    (
        "the {c} upload limit is {v} MB per file",
        "how big can a file upload to {c} be?",
        ("upload", "file"),
        "the {c} upload limit changed to {v} MB per file",
        "what is the current {c} file upload limit?",
    ),
    (
        "{c} keeps its audit logs for {v} days, then deletes them",
        "how long are the {c} audit logs kept?",
        ("audit", "logs", "keep"),
        "compliance asked: {c} keeps its audit logs for {v} days from now",
        "how long does {c} keep audit logs now?",
    ),
    (
        "the {c} queue consumer reads batches of {v} messages",
        "what batch size does the {c} queue consumer use?",
        ("queue", "consumer", "batch"),
        "tuned: the {c} queue consumer reads batches of {v} messages",
        "what batch does the {c} queue consumer use now?",
    ),
]
# Filler: every template holds one or two of the shared words above, so each shows up
# in hundreds of turns of a 10k session.
CHAT = [
    "the {c} port is already in use on my machine, restarting the container",
    "can you check the {c} API client, it throws on empty responses",
    "staging is down again, {c} deploy failed sometimes during the night",
    "the password prompt hangs when I run the {c} setup script",
    "the {c} webhook handler needs a docstring",
    "let's not retry on 4xx in {c}, only on 5xx",
    "{c} worker logs are noisy, lower them to INFO",
    "the connection pool warning in {c} is harmless",
    "how many threads does the test runner use? it feels slow",
    "the {c} cache hit rate looks fine on the dashboard",
    "empty entries in the {c} report should be skipped",
    "release notes for {c} need the migration steps",
    "rebase your branch on main before the {c} review",
    "{c} timeout errors in CI again, probably the network",
    "upstream changed their schema, {c} needs a new parser",
    "the {c} upload form needs a progress bar",
    "rename the file to match the {c} module name",
    "audit the {c} dependencies before the release",
    "the {c} queue is empty after the restart",
    "the {c} consumer crashed once, it recovered on its own",
    "the batch job for {c} finished in four minutes",
    "keep the {c} changes small please",
    "ok, running the {c} tests now",
    "sounds good, go ahead",
    "done, pushed to the branch",
    "I will look at {c} after lunch",
]
ASSISTANT = [
    "I updated the {c} API handler and added a test for the empty body.",
    "The {c} worker now logs the request id on every line.",
    "Fixed the flaky {c} cache test by freezing the clock.",
    "I moved the {c} port parsing into the settings module.",
    "The staging config for {c} now reads from the environment.",
    "Added jitter around the {c} retry loop.",
    "The {c} queue consumer now acknowledges after the write.",
    "I could not reproduce the {c} timeout locally.",
    "The {c} release checklist is in docs/release.md now.",
    "Split the {c} upload handler into parse and store steps.",
]
# (command, line templates): long tool outputs repeat the shared words (every question's
# words are in most outputs), but a line holds at most one of them besides a component
# (a line holding them together would answer the question).
TOOLS = [
    (
        "pytest -q tests/{c}",
        [
            "tests/{c}/test_api.py::test_empty_body_{i} PASSED",
            "tests/{c}/test_cache.py::test_expiry_{i} PASSED",
            "tests/{c}/test_worker.py::test_shutdown_{i} FAILED",
            "tests/{c}/test_queue.py::test_ack_{i} PASSED",
            "tests/{c}/test_webhook.py::test_signature_{i} PASSED",
        ],
    ),
    (
        "kubectl logs deploy/{c} --tail 30",
        [
            "WARN {c} upstream slow after 30s, attempt {i}",
            "INFO cache evicted {i} keys",
            "INFO {i} threads busy",
            "WARN queue lag {i} messages",
            "INFO listening on port 80{i}",
        ],
    ),
    (
        "cat config/{c}.yaml",
        [
            "password_ref: vault/{i}",
            "upload_dir: /var/{c}/uploads/{i}",
            "audit_path: /var/audit/{c}/{i}",
            "release_prefix: release/{c}-{i}",
            "upstream_url: https://{c}-{i}.internal",
        ],
    ),
]
WHERE = ("user", "assistant", "tool")


@dataclass
class AgedQuestion:
    """A question, its answer turn, where and when that turn was planted."""

    text: str
    evidence: str
    where: str
    position: int
    older: str | None = None
    """For an update: the turn holding the old value (it must rank below ``evidence``)."""


@dataclass
class AgedCorpus:
    """The generated session: its messages and questions."""

    total: int
    messages: list[NewMessage] = field(default_factory=list)
    questions: list[AgedQuestion] = field(default_factory=list)


def age_band(position: int, total: int) -> str:
    """``"first"``, ``"middle"`` or ``"last"`` third of a ``total``-turn history."""
    return ("first", "middle", "last")[min(2, position * 3 // max(1, total))]


class _Writer:
    def __init__(self, session_id: str, rng: random.Random) -> None:
        self.session_id = session_id
        self.rng = rng
        self.count = 0
        self.pending: list[NewMessage] = []

    def take(self) -> list[NewMessage]:
        """The turns written since the last call."""
        out, self.pending = self.pending, []
        return out

    def add(self, role: str, parts: list[MessagePart]) -> str:
        index = self.count
        self.count += 1
        message = Message(
            id=new_id("msg"),
            session_id=self.session_id,
            role=role,
            created_at=START_MS + index * 30_000,
            token_estimate=60,
        )
        self.pending.append(NewMessage(message, parts, [50] * len(parts)))
        return message.id

    def tool(self, component: str, planted: str | None = None) -> str:
        rng = self.rng
        command, lines = rng.choice(TOOLS)
        output = [
            rng.choice(lines).format(c=rng.choice(COMPONENTS), i=rng.randint(1, 99))
            for _ in range(30)
        ]
        if planted is not None:
            output[rng.randint(5, 25)] = planted
        return self.add(
            "assistant",
            [
                TextPart(text=f"Checking {component}."),
                ToolPart(
                    tool_name="bash",
                    tool_call_id="call_" + new_id("part")[5:],
                    input={"command": command.format(c=component)},
                    output="\n".join(output),
                ),
            ],
        )

    def filler(self) -> None:
        rng = self.rng
        component = rng.choice(COMPONENTS)
        roll = rng.random()
        if roll < 0.12:
            self.tool(component)
        elif self.count % 2 == 0:
            self.add("user", [TextPart(text=rng.choice(CHAT).format(c=component))])
        else:
            self.add("assistant", [TextPart(text=rng.choice(ASSISTANT).format(c=component))])

    def plant(self, where: str, text: str, component: str) -> str:
        if where == "tool":
            return self.tool(component, text)
        return self.add(where, [TextPart(text=text)])

    def distractor(self, words: tuple[str, ...], component: str) -> None:
        """A turn with all but one of ``words`` (the component counts as one)."""
        kept = list((*words, component))
        kept.pop(self.rng.randrange(len(kept)))
        role = "user" if self.rng.random() < 0.5 else "assistant"
        text = "I looked at the " + " and the ".join(kept) + " again, nothing new there."
        self.add(role, [TextPart(text=text)])


def build(session_id: str, total: int, seed: int = 28) -> AgedCorpus:
    """``total`` turns with ``FACTS`` facts and ``UPDATES`` updated facts planted
    uniformly, each asked once (see the module docstring), held in memory."""
    corpus = AgedCorpus(total)
    for batch in stream(corpus, session_id, seed=seed):
        corpus.messages += batch
    return corpus


def stream(
    corpus: AgedCorpus, session_id: str, *, seed: int = 28, batch: int = 2_000
) -> Iterator[list[NewMessage]]:
    """The turns of :func:`build`, the same for the same seed, ``batch`` at a time
    (memory stays bounded at any ``corpus.total``); ``corpus.questions`` is complete
    once the last batch is taken, ``corpus.messages`` is left alone."""
    total = corpus.total
    rng = random.Random(seed)
    writer = _Writer(session_id, rng)
    pairs = [(t, c) for c in COMPONENTS for t in range(len(TEMPLATES))]
    rng.shuffle(pairs)
    # One event per slot: a fact, the old or new value of an update, or a distractor.
    events: list[tuple[str, int]] = [("fact", i) for i in range(FACTS)]
    events += [("old", i) for i in range(UPDATES)] + [("new", i) for i in range(UPDATES)]
    events += [("distractor", i) for i in range((FACTS + UPDATES) * DISTRACTORS)]
    rng.shuffle(events)
    # An update's old value comes before its new one: swap when shuffled the other way.
    first_seen: dict[int, int] = {}
    for index, (kind, number) in enumerate(events):
        if kind in ("old", "new") and number not in first_seen:
            first_seen[number] = index
            events[index] = ("old", number)
        elif kind in ("old", "new"):
            events[index] = ("new", number)
    slots = sorted(rng.sample(range(total - 1), len(events)))
    olders: dict[int, str] = {}
    for slot, (kind, number) in zip(slots, events, strict=True):
        while writer.count < slot:
            writer.filler()
            if len(writer.pending) >= batch:
                yield writer.take()
        template, component = pairs[number if kind == "fact" else FACTS + number % UPDATES]
        if kind == "distractor":
            template, component = pairs[number % (FACTS + UPDATES)]
            writer.distractor(TEMPLATES[template][2], component)
            continue
        fact, question, _, update, latest = TEMPLATES[template]
        value = str(rng.randint(11, 9999))
        if kind == "fact":
            where = WHERE[number % 3]
            said = writer.plant(where, fact.format(c=component, v=value), component)
            corpus.questions.append(AgedQuestion(question.format(c=component), said, where, slot))
        elif kind == "old":
            olders[number] = writer.plant("user", fact.format(c=component, v=value), component)
        else:
            said = writer.plant("user", update.format(c=component, v=value), component)
            corpus.questions.append(
                AgedQuestion(latest.format(c=component), said, "update", slot, olders[number])
            )
    while writer.count < total:
        writer.filler()
        if len(writer.pending) >= batch:
            yield writer.take()
    if writer.pending:
        yield writer.take()


@dataclass
class AgedScores:
    """Recall@1/5/10 of one ranking, by age band, by where planted, for updates."""

    cells: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    millis: list[float] = field(default_factory=list)
    cpu_millis: list[float] = field(default_factory=list)

    def add(self, row: str, ranked: list[str], question: AgedQuestion) -> None:
        """Score ``ranked`` (message IDs, best first) for ``question`` in ``row``."""
        cell = self.cells.setdefault(row, {1: [], 5: [], 10: []})
        for k in cell:
            top = ranked[:k]
            found = question.evidence in top
            if question.older is not None and question.older in top:
                # Newest first: the new value must rank above the old one.
                found = found and top.index(question.evidence) < top.index(question.older)
            cell[k].append(1.0 if found else 0.0)


ROWS = ("first", "middle", "last", "user", "assistant", "tool", "update", "all facts")


def score_question(
    scores: AgedScores, ranked: list[str], question: AgedQuestion, total: int
) -> None:
    """Add one question's ranking to every row it belongs to."""
    if question.older is not None:
        scores.add("update", ranked, question)
        return
    for row in (age_band(question.position, total), question.where, "all facts"):
        scores.add(row, ranked, question)


def filler(session_id: str, total: int, seed: int = 28) -> list[NewMessage]:
    """``total`` turns of the session's filler alone (no facts, no distractors)."""
    writer = _Writer(session_id, random.Random(seed))
    while writer.count < total:
        writer.filler()
    return writer.take()
