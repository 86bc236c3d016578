"""The ``mnesis`` command line: an offline demo and read-only inspection of a database.

``run(argv)`` is the console-script entry point: it returns the exit code instead of
exiting, so it can be called from tests and other programs. Exit codes: 0 success,
1 a mnesis error or an unexpected failure (printed as one red line on stderr, never a
traceback unless ``--debug`` is given), 2 a usage error, 130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer
from typer.main import get_command

from mnesis.cli._common import fail, tolerate_unencodable_output
from mnesis.cli.check import check_command
from mnesis.cli.commands import context_command, sessions_command, show_command
from mnesis.cli.compact_command import compact_command
from mnesis.cli.demo import demo_command
from mnesis.cli.export_command import dag_command, export_command
from mnesis.cli.hooks_command import hooks_app
from mnesis.cli.import_command import import_command
from mnesis.cli.mcp_command import mcp_command
from mnesis.cli.purge_command import purge_command
from mnesis.cli.report_command import report_command
from mnesis.cli.retrieval_commands import describe_command, expand_command, grep_command
from mnesis.cli.stats_command import stats_command
from mnesis.cli.upgrade_command import upgrade_command
from mnesis.cli.verify_command import verify_command
from mnesis.cli.worker_command import jobs_command, worker_command
from mnesis.errors import MnesisError

__all__ = ["app", "run"]

app = typer.Typer(
    name="mnesis",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command("demo")(demo_command)
app.command("sessions")(sessions_command)
app.command("show")(show_command)
app.command("context")(context_command)
app.command("check")(check_command)
app.command("mcp")(mcp_command)
app.command("report")(report_command)
app.command("upgrade")(upgrade_command)
app.command("worker")(worker_command)
app.command("jobs")(jobs_command)
app.command("grep")(grep_command)
app.command("describe")(describe_command)
app.command("expand")(expand_command)
app.command("stats")(stats_command)
app.command("compact")(compact_command)
app.command("import")(import_command)
app.command("export")(export_command)
app.command("dag")(dag_command)
app.command("purge")(purge_command)
app.command("verify")(verify_command)
app.add_typer(hooks_app, name="hooks")


def _version() -> str:
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
        try:
            fail(str(exc))
        except typer.Exit as exit_:
            return exit_.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug or an environment failure: one line unless --debug
        if _debug["on"]:
            raise
        try:
            fail(f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        except typer.Exit as exit_:
            return exit_.exit_code
    return 0
