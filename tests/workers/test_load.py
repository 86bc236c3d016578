"""A reduced run of ``benchmarks/pg_load.py``: writers and a worker on one database."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.workers import ROOT

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_two_writers_and_a_worker_leave_no_violation_duplicate_or_lost_message(
    pg_url: str,
) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.pg_load", "--db", pg_url, "--writers", "2",
         "--sessions", "3", "--turns", "20", "--workers", "1", "--drain", "5",
         "--phases", "worker"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    (row,) = [line for line in run.stdout.splitlines() if line.startswith("| worker")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[2]) > 0, row
    assert cells[-3:] == ["0", "0", "0"], row
