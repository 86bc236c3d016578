"""Integrity tests: a compacted template session, fault injection, checksums.

Faults are written with plain :mod:`sqlite3` on the database file, as a bug or a
careless operator would: :func:`tampering` opens its own connection with foreign
keys off and, for the history tables the append-only triggers protect, drops the
named triggers for the length of one transaction and re-creates them before it
commits, so the schema the store sees afterwards is the one mnesis made.

The fault catalogue (one function per way to break an invariant, shared by the
checker and repair tests) writes into a compacted template session. Checksums read
the file through a separate read-only connection, so they never depend on the store
code under test. The crash campaign's parent side (:func:`run_trial`,
:func:`verify_trial`) is shared by ``test_crash_campaign.py`` and
``benchmarks/crash_campaign.py``; the child is ``campaign_child.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mnesis import MnesisSession, StorePool, TextPart, TokenEstimator
from mnesis.integrity import IntegrityChecker, ViolationKind
from mnesis.llm import FakeLLM
from mnesis.models.ids import new_id
from mnesis.store.codec import encode_part
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS
from tests.compaction import run_in_fresh_loop, seed_session, small_window_config
from tests.fixtures.conversations import SESSIONS, generate, replay

__all__ = [
    "HISTORY_TABLES",
    "LINEAGE_TABLES",
    "LINEAGE_TRIGGERS",
    "MESSAGE_MUTABLE_COLUMNS",
    "Inject",
    "Template",
    "Trial",
    "TrialOutcome",
    "add_lineage",
    "append_tool_message",
    "build_campaign_template",
    "build_template",
    "compacted_session",
    "context_of",
    "copy_database",
    "covered_messages",
    "dangling",
    "database_checksum",
    "history_checksum",
    "inflated_token_estimate",
    "insert_summary",
    "integrity_check",
    "last_item_twice",
    "last_message_dropped",
    "lineage_deleted",
    "lineage_rows",
    "message_under_two_summaries",
    "orphan_summary",
    "raw_and_summarised",
    "raw_messages",
    "rewrite_context",
    "run_trial",
    "summaries_in_context",
    "summary_with_its_source",
    "table_rows",
    "tampering",
    "tool_result_after_a_summary",
    "two_messages_swapped",
    "two_summaries_merging_each_other",
    "unknown_file_id_in_a_summary",
    "verify_trial",
]

FIXTURE = "bugfix_sprint"
HISTORY_TABLES = ("messages", "message_parts", "summaries")
LINEAGE_TABLES = ("summary_messages", "summary_parents")
MESSAGE_MUTABLE_COLUMNS = frozenset(
    {
        "tokens_input",
        "tokens_output",
        "tokens_cache_read",
        "tokens_cache_write",
        "tokens_total",
        "cost",
        "finish_reason",
        "token_estimate",
    }
)
"""The columns of ``messages`` the store may update (``update_message_tokens``)."""


@dataclass(frozen=True, slots=True)
class Template:
    """A closed database holding one compacted session (leaf and condensed summaries)."""

    db_path: str
    session_id: str


async def compacted_session(db_path: str, pool: StorePool) -> str:
    """Record 100 fixture turns in a 32k window with two explicit compactions and
    automatic compaction in between; returns the (closed) session's ID."""
    session_id, _ = await seed_session(db_path, pool, FIXTURE, 40)
    session = await MnesisSession.load(
        session_id, config=small_window_config(), db_path=db_path, pool=pool, llm=FakeLLM()
    )
    try:
        await session.compact()
        await replay(session, generate(SESSIONS[FIXTURE]), start=40, stop=100)
        await session.compact()
    finally:
        await session.close()
    return session_id


def build_template(db_path: str) -> Template:
    """Build :func:`compacted_session` in ``db_path`` (synchronously, own event loop)."""

    async def build() -> Template:
        pool = StorePool()
        try:
            return Template(db_path, await compacted_session(db_path, pool))
        finally:
            await pool.close_all()

    return run_in_fresh_loop(build)


def copy_database(source: str, target: str) -> str:
    """Copy a closed database file (and any WAL files) to ``target``."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(source + suffix):
            shutil.copyfile(source + suffix, target + suffix)
    return target


# -- fault injection ------------------------------------------------------------
@contextmanager
def tampering(db_path: str, *, drop_triggers: Sequence[str] = ()) -> Iterator[sqlite3.Connection]:
    """One transaction on a raw connection, foreign keys off, the named append-only
    triggers dropped inside it and re-created before the commit."""
    conn = sqlite3.connect(db_path, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN IMMEDIATE")
        saved: list[str] = []
        for name in drop_triggers:
            row = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)
            ).fetchone()
            assert row is not None, f"no trigger {name}"
            saved.append(row[0])
            conn.execute(f"DROP TRIGGER {name}")
        try:
            yield conn
            for sql in saved:
                conn.execute(sql)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


def context_of(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, str]]:
    """The context view as ``(item_type, id)`` pairs, in position order."""
    return [
        (kind, message_id or summary_id)
        for kind, message_id, summary_id in conn.execute(
            "SELECT item_type, message_id, summary_id FROM context_items "
            "WHERE session_id = ? ORDER BY position",
            (session_id,),
        )
    ]


def rewrite_context(
    conn: sqlite3.Connection, session_id: str, items: Sequence[tuple[str, str]]
) -> None:
    """Replace the context view with ``items`` at positions 1..n (tokens kept per item)."""
    tokens = {
        (message_id or summary_id): count
        for message_id, summary_id, count in conn.execute(
            "SELECT message_id, summary_id, tokens FROM context_items WHERE session_id = ?",
            (session_id,),
        )
    }
    conn.execute("DELETE FROM context_items WHERE session_id = ?", (session_id,))
    conn.executemany(
        "INSERT INTO context_items (session_id, position, item_type, message_id, summary_id, "
        "tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                session_id,
                position,
                kind,
                item_id if kind == "message" else None,
                item_id if kind == "summary" else None,
                tokens.get(item_id, 10),
                int(time.time() * 1000),
            )
            for position, (kind, item_id) in enumerate(items, start=1)
        ],
    )


def raw_messages(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """Conversation message IDs (no summary markers), in ``seq`` order."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM messages WHERE session_id = ? AND is_summary = 0 ORDER BY seq",
            (session_id,),
        )
    ]


def summaries_in_context(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """Summary IDs of the context view, in position order."""
    return [item_id for kind, item_id in context_of(conn, session_id) if kind == "summary"]


def covered_messages(conn: sqlite3.Connection, summary_id: str) -> list[str]:
    """Every message under a summary, through all levels, in ``seq`` order."""
    return [
        r[0]
        for r in conn.execute(
            "WITH RECURSIVE down(id) AS (SELECT ? UNION SELECT sp.parent_summary_id "
            "FROM summary_parents sp JOIN down ON sp.summary_id = down.id) "
            "SELECT m.id FROM summary_messages sm JOIN down ON sm.summary_id = down.id "
            "JOIN messages m ON m.id = sm.message_id ORDER BY m.seq",
            (summary_id,),
        )
    ]


def insert_summary(
    conn: sqlite3.Connection,
    session_id: str,
    *,
    sources: Sequence[str] = (),
    merges: Sequence[str] = (),
    span: tuple[str, str] | None = None,
    file_ids: Sequence[str] = (),
) -> str:
    """Write a summary row (not in the context) with the given lineage; returns its ID."""
    summary_id = new_id("sum")
    start, end = span or ((sources[0], sources[-1]) if sources else (None, None))
    conn.execute(
        "INSERT INTO summaries (id, session_id, kind, depth, level, content, token_count, "
        "file_ids, message_id, span_start_message_id, span_end_message_id, "
        "source_message_count, search_text, created_at) "
        "VALUES (?, ?, ?, ?, 1, ?, 40, ?, NULL, ?, ?, ?, ?, ?)",
        (
            summary_id,
            session_id,
            "condensed" if merges else "leaf",
            1 if merges else 0,
            "## Goal\n- injected by a test",
            json.dumps(list(file_ids)),
            start,
            end,
            len(sources),
            "injected by a test",
            int(time.time() * 1000),
        ),
    )
    add_lineage(conn, summary_id, sources=sources, merges=merges)
    return summary_id


def add_lineage(
    conn: sqlite3.Connection,
    summary_id: str,
    *,
    sources: Sequence[str] = (),
    merges: Sequence[str] = (),
) -> None:
    """Append ``summary_messages`` / ``summary_parents`` rows to a summary."""
    conn.executemany(
        "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
        [(summary_id, m, 1000 + i) for i, m in enumerate(sources)],
    )
    conn.executemany(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)",
        [(summary_id, s, 1000 + i) for i, s in enumerate(merges)],
    )


# -- the faults ---------------------------------------------------------------------
Inject = Callable[[sqlite3.Connection, str], tuple[str, ...]]
"""Writes a fault into a session; returns the IDs a violation may name."""

LINEAGE_TRIGGERS = ("summary_messages_no_delete", "summary_parents_no_delete")


def _insert_after(items: list[tuple[str, str]], anchor: str, item: tuple[str, str]) -> None:
    index = next(i for i, (_, item_id) in enumerate(items) if item_id == anchor)
    items.insert(index + 1, item)


def _condensed_in_context(conn: sqlite3.Connection, session_id: str) -> tuple[str, str]:
    """A condensed summary of the context and the first summary it merges."""
    for summary_id in summaries_in_context(conn, session_id):
        child = conn.execute(
            "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? "
            "ORDER BY ordinal LIMIT 1",
            (summary_id,),
        ).fetchone()
        if child is not None:
            return summary_id, child[0]
    raise AssertionError("the template has no condensed summary in its context")


def orphan_summary(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    first, second = raw_messages(conn, sid)[:2]
    return (insert_summary(conn, sid, span=(first, second)),)


def lineage_deleted(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    target = summaries_in_context(conn, sid)[0]
    conn.execute("DELETE FROM summary_messages WHERE summary_id = ?", (target,))
    conn.execute("DELETE FROM summary_parents WHERE summary_id = ?", (target,))
    return (target,)


def dangling(kind: str) -> Inject:
    def inject(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
        missing = new_id("msg" if kind == "message" else "sum")
        rewrite_context(conn, sid, [*context_of(conn, sid), (kind, missing)])
        return (missing,)

    return inject


def two_messages_swapped(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    items = context_of(conn, sid)
    assert items[-1][0] == items[-2][0] == "message"
    items[-2], items[-1] = items[-1], items[-2]
    rewrite_context(conn, sid, items)
    return (items[-1][1],)


def last_item_twice(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    items = context_of(conn, sid)
    rewrite_context(conn, sid, [*items, items[-1]])
    return (items[-1][1],)


def raw_and_summarised(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    items = context_of(conn, sid)
    summary_id = summaries_in_context(conn, sid)[0]
    first = covered_messages(conn, summary_id)[0]
    _insert_after(items, summary_id, ("message", first))
    rewrite_context(conn, sid, items)
    return (first, summary_id)


def summary_with_its_source(source_first: bool) -> Inject:
    def inject(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
        condensed, child = _condensed_in_context(conn, sid)
        items = context_of(conn, sid)
        _insert_after(items, condensed, ("summary", child))
        if source_first:
            index = items.index(("summary", condensed))
            items[index], items[index + 1] = items[index + 1], items[index]
        rewrite_context(conn, sid, items)
        return (condensed, child)

    return inject


def message_under_two_summaries(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    summary_id = summaries_in_context(conn, sid)[-1]
    last = covered_messages(conn, summary_id)[-1]
    overlapping = insert_summary(conn, sid, sources=[last])
    items = context_of(conn, sid)
    _insert_after(items, summary_id, ("summary", overlapping))
    rewrite_context(conn, sid, items)
    return (last, summary_id, overlapping)


def last_message_dropped(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    items = context_of(conn, sid)
    assert items[-1][0] == "message"
    rewrite_context(conn, sid, items[:-1])
    return (items[-1][1],)


def two_summaries_merging_each_other(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    first, second = raw_messages(conn, sid)[:2]
    one = insert_summary(conn, sid, sources=[first])
    two = insert_summary(conn, sid, sources=[second], merges=[one])
    add_lineage(conn, one, merges=[two])
    return (one, two)


def tool_result_after_a_summary(*, call_summarised: bool) -> Inject:
    """A tool result right after a summary: the raw tail of the context goes under a new
    summary, the calling message (the last of the tail) with it or, if not
    ``call_summarised``, dropped from the view altogether."""

    def inject(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
        items = context_of(conn, sid)
        cut = max(i for i, (kind, _) in enumerate(items) if kind == "summary") + 1
        tail = [item_id for _, item_id in items[cut:]]
        tool = append_tool_message(conn, sid, in_context=False)
        covering = insert_summary(conn, sid, sources=tail if call_summarised else tail[:-1])
        rewrite_context(conn, sid, [*items[:cut], ("summary", covering), ("message", tool)])
        return (tool,) if call_summarised else (tool, tail[-1])

    return inject


def inflated_token_estimate(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    target = context_of(conn, sid)[-1][1]
    conn.execute(
        "UPDATE messages SET token_estimate = token_estimate * 10 + 1000 WHERE id = ?", (target,)
    )
    return (target,)


def unknown_file_id_in_a_summary(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    summary_id = summaries_in_context(conn, sid)[0]
    (file_ids,) = conn.execute(
        "SELECT file_ids FROM summaries WHERE id = ?", (summary_id,)
    ).fetchone()
    conn.execute(
        "UPDATE summaries SET file_ids = ? WHERE id = ?",
        (json.dumps([*json.loads(file_ids), new_id("file")]), summary_id),
    )
    return (summary_id,)


# -- checksums --------------------------------------------------------------------
def _read_only(db_path: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{os.path.abspath(db_path)}?mode=ro", uri=True, timeout=30)


def _digest(rows: list[tuple[object, ...]]) -> str:
    text = repr(sorted(rows, key=repr))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def table_rows(
    db_path: str, table: str, *, exclude: frozenset[str] = frozenset()
) -> list[tuple[object, ...]]:
    """Every row of ``table`` (columns in ``exclude`` left out)."""
    conn = _read_only(db_path)
    try:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        wanted = ", ".join(c for c in columns if c not in exclude)
        return conn.execute(f"SELECT {wanted} FROM {table}").fetchall()
    finally:
        conn.close()


def database_checksum(db_path: str) -> dict[str, str]:
    """A digest of every row of every ordinary table (full-text shadow tables included)."""
    conn = _read_only(db_path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
            )
        ]
        return {t: _digest(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}
    finally:
        conn.close()


def history_checksum(db_path: str, *, with_token_counts: bool = True) -> dict[str, str]:
    """Digests of ``messages``, ``message_parts`` and ``summaries``.

    ``with_token_counts=False`` leaves out the token, cost and finish-reason columns of
    ``messages``, the one mutation the store permits on a history row."""
    exclude = frozenset() if with_token_counts else MESSAGE_MUTABLE_COLUMNS
    return {
        table: _digest(
            table_rows(db_path, table, exclude=exclude if table == "messages" else frozenset())
        )
        for table in HISTORY_TABLES
    }


def append_tool_message(conn: sqlite3.Connection, session_id: str, *, in_context: bool) -> str:
    """Write a ``tool``-role message (one text part) at the end of the session."""
    part = TextPart(text="exit status 0: 14 passed in 0.31s")
    tokens = MESSAGE_OVERHEAD_TOKENS + TokenEstimator().estimate_part(part)
    message_id, now = new_id("msg"), int(time.time() * 1000)
    seq = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?", (session_id,)
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO messages (id, session_id, seq, role, created_at, token_estimate) "
        "VALUES (?, ?, ?, 'tool', ?, ?)",
        (message_id, session_id, seq, now, tokens),
    )
    row = encode_part(part)
    conn.execute(
        "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
        "text_content, token_estimate, created_at) VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?)",
        (
            new_id("part"),
            message_id,
            session_id,
            row["part_type"],
            row["content"],
            row["text_content"],
            tokens - MESSAGE_OVERHEAD_TOKENS,
            now,
        ),
    )
    if in_context:
        items = context_of(conn, session_id)
        rewrite_context(conn, session_id, [*items, ("message", message_id)])
    return message_id


def lineage_rows(db_path: str) -> set[tuple[object, ...]]:
    """Every lineage edge, tagged with its table."""
    return {(table, *row) for table in LINEAGE_TABLES for row in table_rows(db_path, table)}


def integrity_check(db_path: str) -> tuple[list[str], list[tuple[object, ...]]]:
    """``PRAGMA integrity_check`` and ``PRAGMA foreign_key_check`` results."""
    conn = sqlite3.connect(db_path, timeout=30)
    try:
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        foreign = conn.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        conn.close()
    return integrity, foreign


# -- the crash campaign -----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Trial:
    """One child killed at a random moment, and what its side log acknowledged."""

    trial: int
    db_path: str
    session_id: str
    returncode: int
    lines: list[str]
    """Complete side-log lines (a line cut by the kill is dropped)."""
    killed_after_ms: float
    stderr: str

    @property
    def acked_turns(self) -> list[tuple[str, ...]]:
        """Message IDs of each acknowledged turn."""
        return [
            tuple(line.split()[2:])
            for line in self.lines
            if line.startswith("ack ") and line.split()[1] != "compact"
        ]

    @property
    def acked_summaries(self) -> list[str]:
        """Summary IDs of acknowledged compactions (explicit or background)."""
        out = []
        for line in self.lines:
            words = line.split()
            if words[:2] == ["ack", "compact"] and words[2] != "-":
                out.append(words[2])
            elif words[0] == "bg-ack":
                out.append(words[1])
        return out

    @property
    def phase(self) -> str:
        """What the child was doing when it died."""
        if self.returncode == 0:
            return "finished"
        phase = "loading"
        background = False
        for line in self.lines:
            word = line.split()[0]
            if word == "begin":
                phase = f"in {line.split()[1]}"
            elif word == "ack":
                phase = "between calls"
            elif word == "bg-start":
                background = True
            elif word == "bg-ack":
                background = False
        return phase + (" + background compaction" if background else "")


@dataclass(slots=True)
class TrialOutcome:
    """What the store looked like after a trial."""

    trial: Trial
    integrity: list[str]
    foreign_key_errors: int
    violations: list[str]
    """Every violation but token mismatches."""
    token_mismatches: list[str]
    """Stored token estimates that disagree with the stored parts."""
    lost_turns: list[tuple[str, ...]]
    lost_summaries: list[str]
    resumed: bool
    """The session loaded again, recorded a turn and still checked clean."""

    @property
    def ok(self) -> bool:
        return (
            self.integrity == ["ok"]
            and not self.foreign_key_errors
            and not self.violations
            and not self.token_mismatches
            and not self.lost_turns
            and not self.lost_summaries
            and self.resumed
        )


def build_campaign_template(db_path: str) -> Template:
    """A session holding the first turns of the campaign's fixture, just over the soft
    compaction threshold of the 32k window, compaction never run, database closed."""
    from tests.integrity.campaign_child import FIXTURE as CAMPAIGN_FIXTURE
    from tests.integrity.campaign_child import START_TURN

    async def build() -> Template:
        pool = StorePool()
        try:
            session_id, _ = await seed_session(db_path, pool, CAMPAIGN_FIXTURE, START_TURN)
        finally:
            await pool.close_all()
        return Template(db_path, session_id)

    return run_in_fresh_loop(build)


def run_trial(trial: int, template: Template, directory: str, *, max_delay: float) -> Trial:
    """Copy the template, start the child, SIGKILL it a random time after it is ready."""
    rng = random.Random(10_000 + trial)
    db_path = copy_database(template.db_path, os.path.join(directory, f"trial-{trial:03d}.db"))
    side_log = os.path.join(directory, f"trial-{trial:03d}.log")
    err_path = os.path.join(directory, f"trial-{trial:03d}.err")
    root = Path(__file__).resolve().parents[2]
    with open(err_path, "w") as err:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integrity.campaign_child",
                db_path,
                template.session_id,
                side_log,
                str(trial),
            ],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    delay = rng.uniform(0.0, max_delay)
    try:
        assert child.stdout is not None
        child.stdout.readline()  # "ready" (or EOF if the child failed to start)
        started = time.perf_counter()
        time.sleep(delay)
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        killed_after = (time.perf_counter() - started) * 1000
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    text = Path(side_log).read_text(encoding="utf-8") if os.path.exists(side_log) else ""
    lines = [line for line in text.split("\n")[:-1] if line]  # the last piece was cut
    with open(err_path, encoding="utf-8") as err_file:
        stderr = err_file.read()[-2_000:]
    return Trial(trial, db_path, template.session_id, child.returncode, lines, killed_after, stderr)


async def verify_trial(trial: Trial) -> TrialOutcome:
    """Open the store the child left, check it, and resume the session."""
    integrity, foreign = integrity_check(trial.db_path)
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=trial.db_path)
        try:
            report = await IntegrityChecker(store, check_tokens=True).run()
            stored = {m.id for m in await store.get_messages(trial.session_id)}
            summaries = {s.id for s in await store.get_summaries(trial.acked_summaries)}
        finally:
            await store.close()
        lost = [turn for turn in trial.acked_turns if not set(turn) <= stored]
        lost_summaries = [s for s in trial.acked_summaries if s not in summaries]
        session = await MnesisSession.load(
            trial.session_id,
            config=small_window_config(),
            db_path=trial.db_path,
            pool=pool,
            llm=FakeLLM(),
        )
        try:
            await session.record("after the crash: still there?", "yes, still here")
            await session.compact()
            after = await IntegrityChecker(session.store).run(trial.session_id)
        finally:
            await session.close()
    finally:
        await pool.close_all()
    found = [(v.kind, f"{v.kind.value}: {v.object_id} ({v.detail})") for v in report.violations]
    return TrialOutcome(
        trial,
        integrity,
        len(foreign),
        [text for kind, text in found if kind != ViolationKind.TOKEN_MISMATCH],
        [text for kind, text in found if kind == ViolationKind.TOKEN_MISMATCH],
        lost,
        lost_summaries,
        after.ok,
    )
