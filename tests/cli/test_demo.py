"""``mnesis demo``: a balanced summary DAG, every instruction kept, the same bytes per seed."""

from __future__ import annotations

import asyncio
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mnesis.cli.demo import demo_config
from mnesis.cli.demo._run import run_demo
from mnesis.compaction.planner import CONDENSE_FAN_IN
from mnesis.compaction.prompts import LEVEL1_SECTIONS
from mnesis.retrieval.results import SummaryDescription
from mnesis.session import MnesisSession

FILES = LEVEL1_SECTIONS[6]
# Independent of the summariser's own recogniser: a path has a slash or a file name's dot,
# lowercase segments (a leading dot allowed), and no unit or protocol shape.
_PATH_LIKE = re.compile(r"(?:~|\.{1,2})?/?(?:\.?[a-z0-9_][a-z0-9_.@+-]*/?)+")
_NOT_PATHS = {"req/s", "i/o", "http/1.1", "req/sec", "requests/sec"}


def _relevant_files(content: str) -> list[str]:
    after = content.split(f"## {FILES}\n", 1)
    if len(after) < 2:
        return []
    line = after[1].splitlines()[0]
    return [] if line.strip() == "-" else line.removeprefix("- ").split(", ")


@pytest.mark.slow
def test_two_thousand_turns_keep_a_balanced_dag_and_every_instruction(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.db")
    report = asyncio.run(run_demo(db, turns=2_000, seed=0))

    leaves = sum(1 for s in report.summaries if s.kind == "leaf")
    depth = max(s.depth for s in report.summaries)
    assert leaves > 100
    assert depth <= math.ceil(math.log(leaves, CONDENSE_FAN_IN)) + 1
    assert report.instructions_lost == []
    assert len(report.instructions_visible) == 8
    for summary in report.summaries:
        for entry in _relevant_files(summary.content):
            assert _PATH_LIKE.fullmatch(entry), (summary.id, entry)
            assert ("/" in entry or "." in entry) and entry.lower() not in _NOT_PATHS
            assert "=" not in entry and "(" not in entry

    async def describe_top() -> SummaryDescription:
        session = await MnesisSession.load(report.session_id, config=demo_config(db))
        try:
            top = max(report.summaries, key=lambda s: s.depth)
            described = await session.retrieval.describe(top.id)
            assert isinstance(described, SummaryDescription)
            return described
        finally:
            await session.close()

    top = asyncio.run(describe_top())
    assert top.depth == depth
    assert top.fan_in == len(top.child_summary_ids) >= 2


def _demo_output(cwd: Path, hash_seed: str) -> bytes:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": src}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mnesis.cli",
            "demo",
            "--db",
            "demo.db",
            "--turns",
            "250",
            "--seed",
            "5",
            "--quiet",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        check=True,
    )
    return done.stdout


def test_runs_with_one_seed_print_the_same_bytes_and_a_rerun_gives_the_same_session(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # Different hash seeds: set iteration order must not matter either.
    first = _demo_output(tmp_path / "a", "1")
    second = _demo_output(tmp_path / "b", "2")
    assert b"summaries" in first and b"compactions over 250 turns" in first
    assert first == second

    # A second run on the first file: only the session's ID and count, the file's size and
    # the summary's ID may differ.
    before = first.decode().splitlines()
    again = _demo_output(tmp_path / "a", "3").decode().splitlines()
    moved = [i for i, (a, b) in enumerate(zip(before, again, strict=True)) if a != b]
    assert len(moved) == 3
    assert "(1 in this database)" in before[moved[0]]
    assert "(2 in this database)" in again[moved[0]]
    assert "demo.db ·" in before[moved[1]]
    assert "Newest summary" in before[moved[2]]
