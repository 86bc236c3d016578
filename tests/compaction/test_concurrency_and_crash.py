"""Compaction under contention and under SIGKILL.

Two compactors on one session (two tasks in one process, or two processes on
one file) must never both commit a round from the same context: one wins, the
other reports the lock (or they run one after the other). A compacting process
killed at a random point must leave a store that opens, passes
``PRAGMA integrity_check``, keeps its lineage whole and still holds every
message the process acknowledged.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from benchmarks.crash_trials import integrity_check

from mnesis import CompactionResult, MnesisSession, StorePool
from mnesis.context.builder import ContextBudget
from mnesis.llm import FakeLLM
from mnesis.testing import SESSIONS, ReplayResult, generate, replay
from tests.compaction import (
    lineage_report,
    run_in_fresh_loop,
    seed_session,
    small_window_config,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = "bugfix_sprint"
SEED_TURNS = 60
CRASH_TRIALS = 24


def _child(stderr: Path, *args: str) -> subprocess.Popen[str]:
    """Start ``crash_child`` with its stdout piped and its stderr in a file.

    Read the pipe only through ``child.stdout`` (``readline``/``read``), never with
    ``communicate()``, which would skip lines ``readline`` already buffered.
    """
    with open(stderr, "w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.compaction.crash_child", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )


async def _assert_consistent(db_path: str, pool: StorePool, session_id: str) -> list[str]:
    """Lineage whole, context within budget; returns the conversation message IDs."""
    session = await MnesisSession.load(
        session_id, config=small_window_config(auto=False), db_path=db_path, pool=pool
    )
    report = await lineage_report(session.store, db_path, session_id)
    assert report.problems == []
    built = await session.build_context()
    assert built.token_estimate <= ContextBudget.compute(session.model_info, session.config).usable
    await session.close()
    return report.conversation_ids


def _check_round(results: list[CompactionResult]) -> None:
    """At most one compactor commits from a given context; a loser names the lock."""
    committed = [r for r in results if r.level_used > 0]
    for r in results:
        if r.level_used == 0:
            assert r.error is None or "lock" in r.error.lower(), r.error
    if len(committed) > 1:
        # Only acceptable if they ran one after the other: the later one started
        # from the context the earlier one left.
        first, second = sorted(committed, key=lambda r: r.tokens_before, reverse=True)
        assert second.tokens_before <= first.tokens_after, (first, second)
        assert first.summary_id != second.summary_id


class TestTwoCompactorsOnOneSession:
    async def test_two_tasks_commit_at_most_one_round_at_a_time(
        self, db_path: str, pool: StorePool
    ) -> None:
        session_id, seeded = await seed_session(db_path, pool, FIXTURE, SEED_TURNS)
        config = small_window_config(auto=False)
        s1 = await MnesisSession.load(
            session_id, config=config, db_path=db_path, pool=pool, llm=FakeLLM()
        )
        s2 = await MnesisSession.load(
            session_id, config=config, db_path=db_path, pool=pool, llm=FakeLLM()
        )
        expected = list(seeded.message_ids)
        conversation = generate(SESSIONS[FIXTURE])
        outcomes = []
        for round_index in range(3):
            r1, r2 = await asyncio.gather(s1.compact(), s2.compact())
            outcomes.append((r1.level_used, r2.level_used, r1.error, r2.error))
            _check_round([r1, r2])
            assert r1.level_used > 0 or r2.level_used > 0, (r1, r2)
            report = await lineage_report(s1.store, db_path, session_id)
            assert report.problems == []
            assert report.expanded_ids == expected
            start = SEED_TURNS + 12 * round_index
            more = await replay(s1, conversation, start=start, stop=start + 12)
            expected += more.message_ids
        print(f"\nin-process rounds (level1, level2, error1, error2): {outcomes}")
        await s1.close()
        await s2.close()

    async def test_two_processes_commit_at_most_one_round_at_a_time(
        self, db_path: str, pool: StorePool, tmp_path: Path
    ) -> None:
        session_id, seeded = await seed_session(db_path, pool, FIXTURE, SEED_TURNS)
        expected = list(seeded.message_ids)
        conversation = generate(SESSIONS[FIXTURE])
        for round_index in range(2):
            logs = [tmp_path / f"child-{round_index}-{i}.err" for i in range(2)]
            children = [_child(log, "compact", db_path, session_id) for log in logs]
            outputs = []
            try:
                for child in children:
                    assert child.stdout is not None
                    assert child.stdout.readline().strip() == "ready"
                for child in children:  # both are loaded and waiting: release them together
                    assert child.stdin is not None
                    child.stdin.write("go\n")
                    child.stdin.flush()
                for child in children:
                    assert child.stdout is not None
                    outputs.append(child.stdout.read())
                    child.wait(timeout=120)
            finally:
                for child in children:
                    if child.poll() is None:
                        child.kill()
                        child.wait()
            for child, log in zip(children, logs, strict=True):
                assert child.returncode == 0, log.read_text()
            results = [CompactionResult(**json.loads(out.splitlines()[-1])) for out in outputs]
            print(f"\nround {round_index}: {[(r.level_used, r.error) for r in results]}")
            _check_round(results)
            assert any(r.level_used > 0 for r in results)
            assert await _assert_consistent(db_path, pool, session_id) == expected
            session = await MnesisSession.load(
                session_id, config=small_window_config(auto=False), db_path=db_path, pool=pool
            )
            start = SEED_TURNS + 20 * round_index
            more: ReplayResult = await replay(session, conversation, start=start, stop=start + 20)
            expected += more.message_ids
            await session.close()


@dataclass(frozen=True)
class Template:
    db_path: str
    session_id: str
    message_ids: list[str]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """A session over its usable budget, compaction never run, database closed."""
    path = str(tmp_path_factory.mktemp("crash-template") / "template.db")

    async def build() -> Template:
        pool = StorePool()
        try:
            session_id, seeded = await seed_session(path, pool, FIXTURE, SEED_TURNS)
        finally:
            await pool.close_all()
        return Template(path, session_id, seeded.message_ids)

    return run_in_fresh_loop(build)


def _copy(template: Template, target: Path) -> str:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(template.db_path + suffix):
            shutil.copyfile(template.db_path + suffix, str(target) + suffix)
    return str(target)


@dataclass(frozen=True)
class CrashTrial:
    """One child killed at a random point, and what it printed before dying."""

    db_path: str
    how: str
    returncode: int
    lines: list[str]
    """Complete output lines (a line cut by the kill is dropped)."""
    stderr: str

    @property
    def acked(self) -> list[str]:
        """Message IDs whose ``record()`` returned in the child, in order."""
        return [mid for line in self.lines if line.startswith("ack ") for mid in line.split()[1:]]


def _run_and_kill(trial: int, template: Template, directory: Path) -> CrashTrial:
    """Replay and compact in a child process; SIGKILL it at a point drawn from ``trial``."""
    rng = random.Random(1_000 + trial)
    db_path = _copy(template, directory / f"crash-{trial:02d}.db")
    log = directory / f"crash-{trial:02d}.err"
    model = "extractive" if trial % 2 == 0 else "fake"
    child = _child(
        log, "replay", db_path, template.session_id, FIXTURE, str(SEED_TURNS), "24", model
    )
    assert child.stdout is not None
    seen: list[str] = []
    rest = ""
    try:
        if rng.random() < 0.5:
            acks = rng.randint(0, 10)
            how = f"trial {trial} ({model}): after {acks} acks"
            if acks == 0:
                time.sleep(rng.uniform(0.15, 0.6))  # import, load, first (hard) compaction
            else:
                while sum(line.startswith("ack ") for line in seen) < acks:
                    line = child.stdout.readline()
                    if not line:
                        break
                    seen.append(line)
        else:
            nth = rng.randint(1, 2)
            how = f"trial {trial} ({model}): during compaction #{nth}"
            while sum(line.startswith("compact-start") for line in seen) < nth:
                line = child.stdout.readline()
                if not line:
                    break
                seen.append(line)
        jitter = rng.uniform(0.0, 0.03)
        time.sleep(jitter)
        how += f" + {jitter * 1000:.0f} ms"
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        rest = child.stdout.read()
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    text = "".join(seen) + rest
    lines = text.split("\n")[:-1]  # a last line without newline was cut by the kill
    return CrashTrial(db_path, how, child.returncode, lines, log.read_text()[-2_000:])


@pytest.fixture(scope="module")
def crash_trials(
    template: Template, tmp_path_factory: pytest.TempPathFactory
) -> dict[int, CrashTrial]:
    """All trials, run two at a time (each on its own copy of the template)."""
    directory = tmp_path_factory.mktemp("crash-trials")
    with ThreadPoolExecutor(max_workers=2) as workers:
        futures = {
            t: workers.submit(_run_and_kill, t, template, directory) for t in range(CRASH_TRIALS)
        }
        return {t: f.result() for t, f in futures.items()}


class TestKilledCompactor:
    @pytest.mark.slow
    @pytest.mark.parametrize("trial", range(CRASH_TRIALS), ids=lambda t: f"trial-{t:02d}")
    async def test_a_killed_process_leaves_a_whole_store_and_every_acknowledged_message(
        self, trial: int, crash_trials: dict[int, CrashTrial], template: Template, pool: StorePool
    ) -> None:
        run = crash_trials[trial]
        how = run.how
        # Killed, or finished cleanly before the kill: anything else is a broken child.
        finished = run.returncode == 0 and run.lines[-1:] == ["done"]
        assert run.returncode == -signal.SIGKILL or finished, (how, run.returncode, run.stderr)

        integrity, foreign = integrity_check(run.db_path)
        assert integrity == ["ok"], how
        assert foreign == [], how
        ids = await _assert_consistent(run.db_path, pool, template.session_id)
        assert ids[: len(template.message_ids)] == template.message_ids, how
        after = ids[len(template.message_ids) :]
        assert after[: len(run.acked)] == run.acked, how
        # At most the turn being recorded when the kill landed is stored unacknowledged.
        assert len(after) - len(run.acked) in (0, 2), how

    async def test_a_lease_left_by_a_killed_compactor_does_not_block_the_next_compaction(
        self, template: Template, tmp_path: Path, pool: StorePool
    ) -> None:
        db_path = _copy(template, tmp_path / "lease.db")
        child = _child(tmp_path / "child.err", "hang", db_path, template.session_id)
        try:
            assert child.stdout is not None
            # The lease is taken before pruning, so the child holds it once it calls the model.
            assert child.stdout.readline().strip() == "model-called"
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        conn = sqlite3.connect(db_path, timeout=30)
        try:
            leases = conn.execute("SELECT owner, expires_at FROM compaction_locks").fetchall()
        finally:
            conn.close()
        assert len(leases) == 1, "the killed child held the session's compaction lease"

        session = await MnesisSession.load(
            template.session_id,
            config=small_window_config(),
            db_path=db_path,
            pool=pool,
            llm=FakeLLM(),
        )
        result = await session.compact()
        await session.close()
        assert result.error is None
        assert result.level_used > 0
