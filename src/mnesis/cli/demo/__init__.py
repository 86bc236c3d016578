"""``mnesis demo``: a long coding-agent session run offline, then what mnesis kept.

Imports go one way: :mod:`.command` (the typer command and its progress display) uses
:mod:`._run` (the session loop), which uses :mod:`._report` (the final tables),
:mod:`._live` (the event counters) and :mod:`._config`; the session's turns come from
:mod:`mnesis.testing`.
"""

from __future__ import annotations

from mnesis.cli.demo._config import DEFAULT_DEMO_DB, DEMO_MODEL, DEMO_OVERRIDES, demo_config
from mnesis.cli.demo._run import run_demo
from mnesis.cli.demo.command import demo_command

__all__ = [
    "DEFAULT_DEMO_DB",
    "DEMO_MODEL",
    "DEMO_OVERRIDES",
    "demo_command",
    "demo_config",
    "run_demo",
]
