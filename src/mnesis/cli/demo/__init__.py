"""``mnesis demo``: a long coding-agent session run offline, then what mnesis kept.

Imports go one way: :mod:`.command` (the typer command and its progress display) uses
:mod:`._run` (the session loop), which uses :mod:`._report` (the final tables),
:mod:`._live` (the event counters) and :mod:`._config`; the session's turns come from
:mod:`mnesis.testing`. The package itself exports only the demo's configuration, which
``mnesis context`` reads too: importing it loads neither the session nor the test kit
(run the demo through :func:`._run.run_demo`).
"""

from __future__ import annotations

from mnesis.cli.demo._config import DEFAULT_DEMO_DB, DEMO_MODEL, DEMO_OVERRIDES, demo_config

__all__ = ["DEFAULT_DEMO_DB", "DEMO_MODEL", "DEMO_OVERRIDES", "demo_config"]
