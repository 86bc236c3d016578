"""``mnesis hooks``: keep a Claude Code or Codex session's history in mnesis as it runs.

``mnesis hooks install claude-code`` (or ``codex``) writes two hooks into the tool's
hook configuration (see :mod:`mnesis.cli.hook_settings`), both running
``mnesis hooks run``:

* ``PreCompact``: before the tool compacts its context, the session's transcript
  (``transcript_path`` of the hook's input) is imported: incrementally, idempotently and
  resumably (:func:`~mnesis.importers.import_file`), with a Claude Code session's
  sub-agent files;
* ``SessionStart`` with source ``compact``: the transcript is imported again (it is
  complete now) and a short note is added to the model's context
  (``hookSpecificOutput.additionalContext``): its history is searchable through the
  mnesis MCP tools.

``mnesis hooks run`` reads the hook's JSON on stdin and never blocks the tool: a
failure is reported on stderr with exit code 1 (a non-blocking error for both tools;
exit code 2 would stop the compaction).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from mnesis.cli._common import (
    DbOption,
    JsonOption,
    checked_database,
    cli_errors,
    echo_json,
    fail,
    stdout_console,
)
from mnesis.cli.hook_settings import AGENTS, MARKER, install, settings_path, uninstall
from mnesis.config import MnesisConfig
from mnesis.errors import MnesisError
from mnesis.importers import ImportReport, detect_format, import_file
from mnesis.importers.claude_code import sub_agent_transcripts
from mnesis.store.immutable import ImmutableStore

__all__ = ["hooks_app", "recall_note"]

hooks_app = typer.Typer(
    help="Keep Claude Code and Codex sessions in mnesis: import before each compaction.",
    no_args_is_help=True,
)

_IMPORTING_EVENTS = ("PreCompact", "PostCompact", "SessionStart", "SessionEnd", "Stop")
"""Events whose run imports the transcript (mnesis installs the first two kinds; the
others work too for a user who adds them)."""
_MAX_INPUT = 1_000_000
"""Bytes of hook input read at most (the documented input is a few hundred)."""

AgentArgument = Annotated[str, typer.Argument(metavar="AGENT", help="claude-code or codex.")]
ScopeOption = Annotated[
    str,
    typer.Option(
        "--scope",
        help="user (~/.claude/settings.json, ~/.codex/hooks.json), project "
        "(.claude/settings.json, .codex/hooks.json) or local (.claude/settings.local.json).",
    ),
]
FileOption = Annotated[
    str | None,
    typer.Option("--file", metavar="PATH", help="Write this settings file instead."),
]


def recall_note(session_ids: list[str]) -> str:
    """The context added after a compaction: where the full history is and how to
    search it."""
    where = f" (mnesis session {', '.join(session_ids)})" if session_ids else ""
    return (
        "Earlier turns of this conversation were compacted, but the full history"
        f"{where} is stored in mnesis and searchable: use the mnesis MCP tools "
        "lcm_grep (search the history), lcm_describe and lcm_expand (read what a summary "
        "or a hit covers, in full) to recall exact details such as errors, decisions, file "
        "names and commands, rather than guessing or asking the user to repeat them."
    )


def _hook_command(db: str | None) -> str:
    """The command the hooks run: this interpreter's mnesis, the database made absolute."""
    words = [sys.executable, "-m", *MARKER.split()]
    if db is not None:
        is_url = "://" in db
        words += ["--db", db if is_url else os.path.abspath(os.path.expanduser(db))]
    return shlex.join(words)


def _target(agent: str, scope: str, file: str | None) -> str:
    if agent not in AGENTS:
        raise typer.BadParameter(f"must be one of {', '.join(AGENTS)}", param_hint="'AGENT'")
    with cli_errors():
        path = settings_path(agent, scope, os.getcwd())
    return os.path.expanduser(file) if file else str(path)


@hooks_app.command("install")
def install_command(
    agent: AgentArgument,
    scope: ScopeOption = "user",
    file: FileOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Install the PreCompact import and the SessionStart (compact) recall note; run it
    again to update them. Other hooks in the file are kept."""
    path = _target(agent, scope, file)
    command = _hook_command(db)
    with cli_errors():
        data = install(Path(path), agent, command)
    if as_json:
        echo_json({"file": path, "command": command, "hooks": data["hooks"]})
        return
    tool = "claude" if agent == "claude-code" else "codex"
    stdout_console().print(
        f"Installed mnesis hooks for {agent} in {path}: PreCompact imports the transcript, "
        f"SessionStart (compact) adds the recall note.\nCommand: {command}\n"
        f"Give the model the tools too: {tool} mcp add mnesis -- mnesis mcp"
        + ("" if db is None else f" --db {shlex.quote(db)}"),
        soft_wrap=True,
    )


@hooks_app.command("uninstall")
def uninstall_command(
    agent: AgentArgument,
    scope: ScopeOption = "user",
    file: FileOption = None,
) -> None:
    """Remove mnesis's hooks (and only those) from the tool's settings."""
    path = _target(agent, scope, file)
    with cli_errors():
        removed = uninstall(Path(path))
    stdout_console().print(f"Removed {removed} mnesis hook(s) from {path}.")


async def _import(config: MnesisConfig, path: str) -> list[ImportReport]:
    """Import ``path`` and, for a Claude Code session, its sub-agents' files."""
    fmt = detect_format(path)
    store = ImmutableStore(config.store)
    await store.initialize()
    try:
        reports = [await import_file(store, path, fmt)]
        if fmt == "claude-code":
            for sub in sub_agent_transcripts(path):
                reports.append(await import_file(store, sub, fmt))
    finally:
        await store.close()
    return reports


def _hook_input() -> dict[str, Any]:
    raw = sys.stdin.read(_MAX_INPUT + 1)
    if len(raw) > _MAX_INPUT:
        fail("hook input over 1 MB: not a hook's JSON")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        fail(f"hook input is not JSON: {exc}")
    if not isinstance(data, dict):
        fail("hook input must be a JSON object")
    return data


@hooks_app.command("run")
def run_command(db: DbOption = None) -> None:
    """Run by the hooks, with the hook's JSON on stdin (``hook_event_name``,
    ``transcript_path``, ``source``): imports the transcript; after a compaction, prints
    the recall note as ``additionalContext``."""
    data = _hook_input()
    event = data.get("hook_event_name")
    path = data.get("transcript_path")
    reports: list[ImportReport] = []
    if event in _IMPORTING_EVENTS and isinstance(path, str) and path:
        if not os.path.isfile(os.path.expanduser(path)):
            fail(f"no transcript at {path}")
        with checked_database(db, must_exist=False) as (config, location):
            try:
                reports = asyncio.run(_import(config, os.path.expanduser(path)))
            except MnesisError as exc:
                fail(f"importing {path} into {location}: {exc}")
    if event == "SessionStart" and data.get("source") == "compact":
        ids = [i for r in reports[:1] for i in r.session_ids]
        output = {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": recall_note(ids),
            }
        }
        typer.echo(json.dumps(output, ensure_ascii=False))
