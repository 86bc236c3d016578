"""The ``mnesis`` command line: an offline demo and read-only inspection of a database.

``run(argv)`` is the console-script entry point: it returns the exit code instead of
exiting, so it can be called from tests and other programs. Exit codes: 0 success,
1 a mnesis error or an unexpected failure (printed as one red line on stderr, never a
traceback unless ``--debug`` is given), 2 a usage error, 130 interrupted.

The commands are the :data:`COMMANDS` table: each module is imported only when its
command runs (see :mod:`mnesis.cli._lazy`), so ``mnesis --help`` and ``mnesis --version``
load typer and rich, not the store. A new command is one line in the table.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.main import get_command

from mnesis.cli._lazy import Entry, LazyGroup
from mnesis.errors import MnesisError

__all__ = ["COMMANDS", "app", "run"]

COMMANDS: dict[str, Entry] = {
    "demo": Entry(
        "mnesis.cli.demo.command:demo_command",
        "Run a long coding-agent session offline and show what mnesis kept and compacted.",
    ),
    "sessions": Entry(
        "mnesis.cli.commands:sessions_command",
        "List the sessions of a database: ID, model, status, turns, context size and last "
        "activity (newest first).",
    ),
    "show": Entry(
        "mnesis.cli.commands:show_command",
        "Show the stored messages of a session: roles and abbreviated parts, or with --full / "
        "--message every text and tool output in full (pruned outputs included).",
    ),
    "context": Entry(
        "mnesis.cli.context_command:context_command",
        "Show the context the next turn of a session would send: summaries annotated, and "
        "where the tokens go against the budget.",
    ),
    "check": Entry(
        "mnesis.cli.check:check_command",
        "Check the database file, lineage, the context view and file references of every "
        "session (or one).",
    ),
    "mcp": Entry(
        "mnesis.cli.mcp_command:mcp_command",
        "Serve `lcm_grep`, `lcm_describe`, `lcm_expand` and `lcm_sessions` over MCP, for "
        "Claude Code, Cursor and other MCP clients (needs the `mcp` extra).",
    ),
    "report": Entry(
        "mnesis.cli.report_command:report_command",
        "Write a self-contained HTML report of a session: history versus context tokens per "
        "turn with the compactions marked, the summary DAG (click a node to read it), "
        "compactions by level, pruned tool outputs (paged), a search box over the messages "
        "and a transcript with the compaction points. Opens offline in any browser.",
    ),
    "upgrade": Entry(
        "mnesis.cli.upgrade_command:upgrade_command",
        "Copy a database written by the earlier `mnesis` library (0.4.x) into a NEW file in "
        "this schema: every session, message, part, tool state, tombstone, summary (its span "
        "becomes its lineage) and file reference. The original is only read (its sha256 is "
        "compared before and after); counts are verified and the integrity check runs.",
    ),
    "worker": Entry(
        "mnesis.cli.worker_command:worker_command",
        "Run compaction and integrity jobs from the PostgreSQL database's queue until SIGTERM "
        "(running jobs finish first). Waits for the database while it is down (at start too) "
        "instead of exiting. Needs the `workers` extra.",
    ),
    "jobs": Entry(
        "mnesis.cli.worker_command:jobs_command",
        "List the queue's jobs: queued, running, stalled (worker gone) and failed, with their "
        "worker, runs and last error.",
    ),
    "grep": Entry(
        "mnesis.cli.retrieval_commands:grep_command",
        "Search the stored history: messages, tool outputs and summaries, best hits first, "
        "each with the summary that now covers it (expand that to read around the hit).",
    ),
    "describe": Entry(
        "mnesis.cli.retrieval_commands:describe_command",
        "Describe a summary (kind, depth, what it covers), a message or a file.",
    ),
    "expand": Entry(
        "mnesis.cli.retrieval_commands:expand_command",
        "Print what a summary covers: its child summaries and original messages, in full, one "
        "page of --max-tokens at a time.",
    ),
    "stats": Entry(
        "mnesis.cli.stats_command:stats_command",
        "Count messages, parts, tokens, summaries (by kind, level and depth), compactions, "
        "pruned tool outputs and the database size.",
    ),
    "compact": Entry(
        "mnesis.cli.compact_command:compact_command",
        "Compact a session now: summaries replace old messages in its context (nothing is "
        "deleted; grep and expand still reach every message).",
    ),
    "compactions": Entry(
        "mnesis.cli.compactions_command:compactions_command",
        "List the session's compactions (summaries and tool-output prunes), oldest first: "
        "what each took out of the context view (messages or summaries, tokens) and the "
        "entities (paths, commands, identifiers, numbers, URLs, decisions) that left it, with "
        "the message or summary IDs that still hold each (`mnesis expand ID`).",
    ),
    "import": Entry(
        "mnesis.cli.import_command:import_command",
        "Import agent transcripts (Claude Code, Codex, OpenAI chat JSON/JSONL, generic JSONL): "
        "one session per source session, tool calls paired with their results. Safe to "
        "repeat: files already imported add only their new turns.",
    ),
    "export": Entry(
        "mnesis.cli.export_command:export_command",
        "Print a session's original messages (never the summaries): `jsonl` (one stored "
        "message per line, lossless), `openai` or `anthropic` (API message lists), "
        "`markdown`.",
    ),
    "dag": Entry(
        "mnesis.cli.export_command:dag_command",
        "Print a session's summary DAG (condensed summaries → the summaries they merge; leaf "
        "summaries with the number of messages they cover) as Mermaid or Graphviz dot.",
    ),
    "purge": Entry(
        "mnesis.cli.purge_command:purge_command",
        "Delete a session, its sub-agent sessions and everything stored for them (messages, "
        "parts, summaries, context, search index). Cannot be undone.",
    ),
    "verify": Entry(
        "mnesis.cli.verify_command:verify_command",
        "Check a session's hash chain and print its head (hash, links, last seq) to record "
        "elsewhere; ``--expect`` compares with a head recorded earlier.",
    ),
    "hooks": Entry(
        "mnesis.cli.hooks_command:hooks_app",
        "Keep Claude Code and Codex sessions in mnesis: import before each compaction.",
    ),
}
"""``name -> Entry``, in the order ``mnesis --help`` lists them. The summary is the first
paragraph of the command's help (``tests/cli/test_lazy.py`` checks they agree)."""

_SETTINGS: dict[str, Any] = {
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": "markdown",
}


class _Commands(LazyGroup):
    table = COMMANDS
    settings = _SETTINGS


app = typer.Typer(
    name="mnesis",
    cls=_Commands,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    **_SETTINGS,
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mnesis-lcm")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from mnesis import __version__

        return __version__


_debug = {"on": False}


def _set_debug(value: bool) -> None:
    _debug["on"] = value


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"mnesis {_version()}")
        raise typer.Exit()


@app.callback()
def _main(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            callback=_set_debug,
            is_eager=True,
            help="Show the full traceback of an unexpected error.",
        ),
    ] = False,
) -> None:
    """Lossless Context Management for long-running LLM agents.

    Try `mnesis demo`: a few hundred agent turns on a local SQLite file with a fake
    model, then `mnesis sessions`, `mnesis show` and `mnesis context` to look inside.
    """
    from mnesis.cli._common import tolerate_unencodable_output

    tolerate_unencodable_output()


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        get_command(app).main(args=args, prog_name="mnesis", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    except MnesisError as exc:  # a command let one through: still no traceback
        from mnesis.cli._common import fail

        try:
            fail(str(exc))
        except typer.Exit as exit_:
            return exit_.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug or an environment failure: one line unless --debug
        if _debug["on"]:
            raise
        from mnesis.cli._common import fail

        try:
            fail(f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        except typer.Exit as exit_:
            return exit_.exit_code
    return 0
