"""The crash campaign's parent side: copy a template, start a writer, SIGKILL it, check.

A trial copies a session sitting just over the soft compaction threshold of a 32k
window (:func:`build_campaign_template`) and starts ``benchmarks/crash_child.py``, which
writes to it until :func:`run_trial` kills it at a random moment.
:func:`verify_trial` then checks the store it left and resumes the session. Used by
``python -m benchmarks.crash_campaign`` (the full campaign) and by
``tests/integrity/test_crash_campaign.py`` (ten trials).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnesis import CompactionConfig, MnesisConfig, MnesisSession, StorePool
from mnesis.integrity import IntegrityChecker, ViolationKind
from mnesis.testing import SESSIONS, FakeLLM, generate, replay

__all__ = [
    "FIXTURE",
    "START_TURN",
    "Template",
    "Trial",
    "TrialOutcome",
    "build_campaign_template",
    "campaign_config",
    "run_trial",
    "verify_trial",
]

FIXTURE = "webapp_auth"
START_TURN = 20
"""The template holds the fixture's first ``START_TURN`` turns."""


def campaign_config(**compaction: Any) -> MnesisConfig:
    """A 32k window (26,000 usable tokens), compaction settings overridden by keyword."""
    settings: dict[str, Any] = {
        "compaction_output_budget": 4_000,
        "prune_protect_tokens": 4_000,
        "prune_minimum_tokens": 2_000,
    }
    settings.update(compaction)
    return MnesisConfig(
        model_overrides={"context_limit": 32_000, "max_output_tokens": 2_000},
        compaction=CompactionConfig(**settings),
    )


@dataclass(frozen=True, slots=True)
class Template:
    """A closed database holding the session every trial starts from."""

    db_path: str
    session_id: str


def copy_database(source: str, target: str) -> str:
    """Copy a closed database file (and any WAL files) to ``target``."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(source + suffix):
            shutil.copyfile(source + suffix, target + suffix)
    return target


def integrity_check(db_path: str) -> tuple[list[str], list[tuple[object, ...]]]:
    """``PRAGMA integrity_check`` and ``PRAGMA foreign_key_check`` results."""
    conn = sqlite3.connect(db_path, timeout=30)
    try:
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        foreign = conn.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        conn.close()
    return integrity, foreign


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
        """Nothing lost, nothing broken, and the session carried on."""
        return (
            self.integrity == ["ok"]
            and not self.foreign_key_errors
            and not self.violations
            and not self.token_mismatches
            and not self.lost_turns
            and not self.lost_summaries
            and self.resumed
        )


async def build_campaign_template(db_path: str) -> Template:
    """A session holding the first turns of the campaign's fixture, just over the soft
    compaction threshold of the 32k window, compaction never run, database closed."""
    pool = StorePool()
    try:
        session = await MnesisSession.create(
            model="fake/model",
            db_path=db_path,
            pool=pool,
            llm=FakeLLM(),
            config=campaign_config(auto=False),
        )
        await replay(session, generate(SESSIONS[FIXTURE]), stop=START_TURN)
        await session.close()
    finally:
        await pool.close_all()
    return Template(db_path, session.id)


def run_trial(trial: int, template: Template, directory: str, *, max_delay: float) -> Trial:
    """Copy the template, start the child, SIGKILL it a random time after it is ready."""
    rng = random.Random(10_000 + trial)
    db_path = copy_database(template.db_path, os.path.join(directory, f"trial-{trial:03d}.db"))
    side_log = os.path.join(directory, f"trial-{trial:03d}.log")
    err_path = os.path.join(directory, f"trial-{trial:03d}.err")
    root = Path(__file__).resolve().parents[1]
    with open(err_path, "w") as err:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.crash_child",
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
            config=campaign_config(),
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
