"""Crash campaign (reduced): a writer killed with SIGKILL at random moments.

Each trial copies a session sitting just over the soft compaction threshold and
starts ``benchmarks/crash_child.py``, which runs a random mix of ``record``, ``send``,
``stream`` and ``compact`` (background compaction on, a fake model with small
delays) and fsyncs an ``ack`` line to a side log after each call returns. The
parent kills it at a random moment. Afterwards the store must open, pass
``PRAGMA integrity_check`` and ``foreign_key_check``, report zero violations
(token estimates included), still hold every acknowledged turn and compaction,
and let the session carry on.

A turn's or a prune pass's writes are several transactions: :class:`TestAWriteCutInHalf`
stops the process (a ``BaseException`` from the store, which nothing catches) between
two of them, deterministically, and checks the same things.

``python -m benchmarks.crash_campaign`` runs the full 100-trial campaign.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from benchmarks.crash_trials import (
    Template,
    Trial,
    TrialOutcome,
    build_campaign_template,
    run_trial,
    verify_trial,
)

from mnesis import MnesisSession, StorePool
from mnesis.integrity import IntegrityChecker
from mnesis.llm import Fail, FakeLLM, Respond, ToolCall
from mnesis.testing import SESSIONS, generate, replay
from tests.compaction import run_in_fresh_loop, small_window_config

TRIALS = 10
MAX_DELAY_SECONDS = 2.0


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    path = str(tmp_path_factory.mktemp("campaign") / "template.db")
    return run_in_fresh_loop(lambda: build_campaign_template(path))


@pytest.fixture(scope="module")
def trials(template: Template, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Trial]:
    """Every trial, two children at a time, each on its own copy of the template."""
    directory = str(tmp_path_factory.mktemp("campaign-trials"))
    with ThreadPoolExecutor(max_workers=2) as workers:
        futures = {
            t: workers.submit(run_trial, t, template, directory, max_delay=MAX_DELAY_SECONDS)
            for t in range(TRIALS)
        }
        done = {t: f.result() for t, f in futures.items()}
    phases = Counter(trial.phase for trial in done.values())
    print(f"\ncrash campaign: {TRIALS} trials, killed {dict(phases)}")
    return done


@pytest.fixture(scope="module")
def outcomes(trials: dict[int, Trial]) -> dict[int, TrialOutcome]:
    """What each trial left behind (the store checked, then the session resumed)."""

    async def verify_all() -> dict[int, TrialOutcome]:
        return {t: await verify_trial(trial) for t, trial in trials.items()}

    return run_in_fresh_loop(verify_all)


@pytest.mark.slow
class TestAKilledWriter:
    @pytest.mark.parametrize("trial", range(TRIALS), ids=lambda t: f"trial-{t:02d}")
    def test_leaves_a_whole_store_with_every_acknowledged_turn(
        self, trial: int, trials: dict[int, Trial], outcomes: dict[int, TrialOutcome]
    ) -> None:
        run, outcome = trials[trial], outcomes[trial]
        how = f"trial {trial}: killed {run.killed_after_ms:.0f} ms after ready, {run.phase}"
        assert run.returncode in (-9, 0), (how, run.stderr)
        # A child killed early may die in its first call (a loaded machine slows it):
        # that is a trial too; the campaign as a whole must have acknowledged turns
        # (the test below), and a child that ran to its end, its own.
        assert run.acked_turns or run.returncode == -9, (how, run.stderr)
        assert outcome.integrity == ["ok"], how
        assert outcome.foreign_key_errors == 0, how
        assert outcome.violations == [], how
        assert outcome.lost_turns == [], how
        assert outcome.lost_summaries == [], how
        assert outcome.resumed, how

    def test_no_trial_leaves_a_stale_token_estimate(
        self, outcomes: dict[int, TrialOutcome]
    ) -> None:
        """Fails in the trials whose kill landed between a write and its token update
        (see TestAWriteCutInHalf for the deterministic version)."""
        stale = {
            f"trial {t} ({o.trial.phase})": o.token_mismatches
            for t, o in sorted(outcomes.items())
            if o.token_mismatches
        }
        assert stale == {}

    def test_the_campaign_killed_writers_in_the_middle_of_their_work(
        self, trials: dict[int, Trial]
    ) -> None:
        killed = [t for t in trials.values() if t.returncode == -9]
        assert len(killed) >= TRIALS // 2
        assert sum(len(t.acked_turns) for t in trials.values()) > TRIALS
        assert any(t.acked_summaries for t in trials.values()), "no compaction was acknowledged"


class _Killed(BaseException):
    """The process dies here: nothing in mnesis catches a BaseException."""


def _die_at(session: MnesisSession, method: str) -> None:
    """Kill the session when it next calls ``method`` of its store."""

    async def killed(*args: Any, **kwargs: Any) -> None:
        raise _Killed(method)

    setattr(session.store, method, killed)


async def _after_restart(db_path: str, session_id: str) -> list[str]:
    """The violations a fresh process finds (token estimates included)."""
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=db_path)
        report = await IntegrityChecker(store, check_tokens=True).run(session_id)
        await store.close()
    finally:
        await pool.close_all()
    return [f"{v.kind.value}: {v.object_id} ({v.detail})" for v in report.violations]


@dataclass(frozen=True)
class Cut:
    name: str
    die_at: str
    """The store method whose call the process does not survive."""
    act: Callable[[MnesisSession], Awaitable[object]]


async def _consume(stream: AsyncIterator[object]) -> None:
    async for _ in stream:
        pass


CUTS = [
    # Each of these is now one transaction; the process dies at the call that would
    # write it, and the store must still be consistent (the turn's stub only).
    Cut(
        "a streamed reply's parts and its token estimate",
        "append_parts",
        lambda s: s.send("a question whose answer is streamed and stored"),
    ),
    Cut(
        "a failed reply's partial text and its token estimate",
        "append_parts",
        lambda s: _consume(s.stream("this time the model fails half-way")),
    ),
    Cut(
        "a tool result and its message's token estimate",
        "update_part_status",
        lambda s: s.complete_tool_call("call_1", output="file.txt\n" * 400),
    ),
    Cut("a prune pass and the summary after it", "commit_compaction", lambda s: s.compact()),
]


class TestAWriteCutInHalf:
    @pytest.mark.parametrize("cut", CUTS, ids=[c.name for c in CUTS])
    async def test_the_store_left_behind_has_consistent_token_estimates(
        self, db_path: str, cut: Cut
    ) -> None:
        pool = StorePool()
        llm = FakeLLM()
        session = await MnesisSession.create(
            model="fake/cut",
            db_path=db_path,
            pool=pool,
            llm=llm,
            config=small_window_config(auto=False),
        )
        await replay(session, generate(SESSIONS["bugfix_sprint"]), stop=20)
        llm.script(Respond("checking", tool_calls=(ToolCall("call_1", "bash", {"cmd": "ls"}),)))
        await session.send("list the files")
        llm.script(Fail("rate limited", after_chars=60))
        if "fails" not in cut.name:
            llm.clear()
        assert await _after_restart(db_path, session.id) == []
        _die_at(session, cut.die_at)
        with pytest.raises(_Killed):
            await cut.act(session)
        await pool.close_all()
        assert await _after_restart(db_path, session.id) == []
