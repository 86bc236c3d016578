"""``mnesis --help`` lists the commands from a table without importing them.

The modules loaded are counted in a fresh interpreter (never timed here; the time is
``benchmarks/bench_import_time.py``'s). The help printed from the table is compared with
the help printed once every command is imported, so the table's summaries cannot drift
from the commands' own docstrings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from mnesis.cli import COMMANDS, app
from mnesis.cli._lazy import LazyCommands, load_target

MAX_HELP_MODULES = 400
"""The most modules ``mnesis --help`` may leave in ``sys.modules``: typer with its rich,
Markdown-rendered help is ~320 (the interpreter's own ~35 included)."""

STORE_AND_FRIENDS = ["sqlite3", "pydantic", "orjson", "jinja2", "jsonschema", "regex", "httpx"]
"""What none of the commands' listing needs (the store, the models, the providers)."""

_PROBE = """
import contextlib, io, json, sys
from mnesis.cli import run
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = run(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run_fresh(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _top_level(modules: list[str], names: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(names))


def test_help_imports_no_command_module() -> None:
    got = _run_fresh("--help")
    assert got["code"] == 0
    assert "Usage: mnesis" in got["out"] and "purge" in got["out"]
    modules = got["modules"]
    assert len(modules) < MAX_HELP_MODULES, modules
    mnesis_modules = [m for m in modules if m.split(".")[0] == "mnesis"]
    assert mnesis_modules == ["mnesis", "mnesis.cli", "mnesis.cli._lazy", "mnesis.errors"]
    assert _top_level(modules, STORE_AND_FRIENDS) == []


def test_version_imports_no_command_module_and_no_help_renderer() -> None:
    got = _run_fresh("--version")
    assert got["code"] == 0
    assert got["out"].startswith("mnesis ")
    modules = got["modules"]
    assert not [m for m in modules if m.startswith("mnesis.cli.") and m != "mnesis.cli._lazy"]
    assert _top_level(modules, [*STORE_AND_FRIENDS, "markdown_it"]) == []


def test_a_command_imports_only_its_own_module() -> None:
    got = _run_fresh("purge", "--help")
    assert got["code"] == 0
    assert "Cannot be undone" in got["out"]
    commands = {m for m in got["modules"] if m.endswith("_command") or m == "mnesis.cli.demo"}
    assert commands == {"mnesis.cli.purge_command"}


SESSION_AND_TEST_KIT = (
    "mnesis.session",
    "mnesis._session",
    "mnesis.testing",
    "mnesis.cli.demo._run",
)
"""What only ``mnesis demo`` runs: the session loop and the generated coding-agent turns."""


@pytest.mark.parametrize("command", ["sessions", "show", "context", "grep", "stats", "check"])
def test_an_inspection_command_loads_neither_the_session_nor_the_test_kit(command: str) -> None:
    got = _run_fresh(command, "--help")
    assert got["code"] == 0
    loaded = [m for m in got["modules"] if m.startswith(SESSION_AND_TEST_KIT)]
    assert loaded == [], loaded


def _root_help(group: Any, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        group.main(args=["--help"], prog_name="mnesis")
    assert stopped.value.code == 0
    return capsys.readouterr().out


def test_the_listing_from_the_table_is_the_commands_own_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    group = get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    assert isinstance(commands, LazyCommands)
    from_table = _root_help(group, capsys)
    assert not [name for name in COMMANDS if commands.is_built(name)]

    built = dict(commands.items())
    assert list(built) == list(COMMANDS)
    assert _root_help(group, capsys) == from_table


def test_every_entry_is_a_cli_module_attribute() -> None:
    for name, entry in COMMANDS.items():
        module = entry.target.partition(":")[0]
        assert module.startswith("mnesis.cli."), name
        assert load_target(entry.target) is not None
        assert entry.summary == " ".join(entry.summary.split()), name


def test_an_unknown_command_is_refused_with_a_suggestion() -> None:
    result = CliRunner().invoke(app, ["sesions"])
    assert result.exit_code == 2
    assert "Did you mean 'sessions'?" in result.stderr
