"""What every command shares: consoles, error reporting, the database to open, formatting.

Error contract of the CLI: a :class:`~mnesis.errors.MnesisError` becomes one red line on
stderr and exit code 1; usage errors exit with 2 (typer's own handling). Nothing here is
library code: this is the only layer of mnesis that prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from mnesis.config import MnesisConfig
from mnesis.errors import MnesisError, MnesisStoreError, NotFoundError, StoreCorruptError
from mnesis.store.factory import parse_location, resolve_location

__all__ = [
    "MAX_COUNT",
    "DbOption",
    "JsonOption",
    "SessionArg",
    "abbreviate",
    "check_mnesis_database",
    "checked_database",
    "cli_errors",
    "count_option",
    "echo_json",
    "fail",
    "format_bytes",
    "format_time",
    "format_tokens",
    "resolve_config",
    "stderr_console",
    "stdout_console",
    "tolerate_unencodable_output",
]

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH|URL",
        help=(
            "SQLite database file or postgresql:// URL (default: $LCM_DATABASE_URL, "
            "else $MNESIS_DB_PATH, else ~/.mnesis/sessions.db)."
        ),
        show_default=False,
    ),
]
MAX_COUNT = 1_000_000_000
"""The upper bound of the CLI's integer options (limits, token counts)."""


def count_option(flag: str, help: str, *, minimum: int = 1) -> Any:
    """A ``typer.Option`` for an integer from ``minimum`` to :data:`MAX_COUNT`."""
    return typer.Option(flag, min=minimum, max=MAX_COUNT, help=help)


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]

SessionArg = Annotated[str, typer.Argument(metavar="SESSION_ID", help="A session ID (sess_...).")]


def tolerate_unencodable_output() -> None:
    """Let stdout/stderr print any stored text: the API accepts lone surrogates, which no
    encoding can write, so they are printed as backslash escapes instead of failing."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, TypeError, OSError):
                reconfigure(errors="backslashreplace")


def stdout_console() -> Console:
    """A console on the current ``sys.stdout`` (made per call, so test runners can swap it)."""
    return Console(highlight=False)


def stderr_console() -> Console:
    """A console on the current ``sys.stderr``."""
    return Console(stderr=True, highlight=False)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``message`` as one red line on stderr and exit with ``code``."""
    stderr_console().print(f"[bold red]Error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def cli_errors(db_path: str | None = None) -> Iterator[None]:
    """Turn mnesis errors raised inside the block into :func:`fail` (exit code 1)."""
    try:
        yield
    except NotFoundError as exc:
        where = f" in {db_path}" if db_path else ""
        hint = (
            f"; list sessions with `mnesis sessions --db {db_path}`"
            if db_path and exc.kind == "session"
            else ""
        )
        fail(f"{exc}{where}{hint}")
    except MnesisError as exc:
        fail(str(exc))


def resolve_config(db: str | None) -> tuple[MnesisConfig, str]:
    """The configuration from the environment, with ``--db`` (if given) as the store.

    ``--db`` takes a file path (or ``sqlite:///path``) or a ``postgresql://`` URL and
    overrides both ``$MNESIS_DB_PATH`` and ``$LCM_DATABASE_URL``. Returns the config and
    the location it names (the path or URL, as the user wrote it). Raises
    :class:`typer.BadParameter` (a usage error, exit code 2) for an empty ``--db`` and
    :class:`~mnesis.errors.MnesisConfigError` for a location no backend takes.
    """
    config = MnesisConfig.from_env()
    if db is None:
        location = resolve_location(config.store)
        return config, config.store.database_url or location.target
    if not db.strip():
        raise typer.BadParameter("must be a non-empty path or URL", param_hint="'--db'")
    location = parse_location(db, key="--db")
    if location.backend == "postgres":
        config.store.database_url = db
    else:
        config.store.database_url = None
        config.store.db_path = location.target
    return config, db


def check_mnesis_database(location: str, *, must_exist: bool) -> None:
    """Refuse what the inspection commands must not open, before the store opens it.

    Opening a store creates and migrates a missing SQLite file, so the inspection commands
    (``must_exist``) check first that the file exists; whether an existing file is a
    mnesis database is the SQLite backend's own check when it opens. A PostgreSQL URL
    is checked by the server when the store connects.
    Raises :class:`~mnesis.errors.MnesisStoreError` / :class:`StoreCorruptError`.
    """
    parsed = parse_location(location, key="--db")
    if parsed.backend != "sqlite":
        return
    path = parsed.target
    if path == ":memory:":
        if must_exist:
            raise MnesisStoreError("an in-memory database holds no sessions; pass --db PATH")
        return
    full = os.path.abspath(os.path.expanduser(path))
    if os.path.isdir(full):
        raise StoreCorruptError(f"{full} is a directory, not a database file")
    if must_exist and not os.path.exists(full):
        raise MnesisStoreError(
            f"no database at {full}; create one with `mnesis demo --db {location}` "
            "or point --db / MNESIS_DB_PATH / LCM_DATABASE_URL at an existing database"
        )


@contextlib.contextmanager
def checked_database(db: str | None, *, must_exist: bool) -> Iterator[tuple[MnesisConfig, str]]:
    """What a command does around its work on the database ``--db`` names: yields the
    config and the location (:func:`resolve_config`) once :func:`check_mnesis_database`
    has passed; the block runs under ``cli_errors(location)``, so that any mnesis error
    (a missing session names the database) is one line, exit code 1."""
    with cli_errors():
        config, location = resolve_config(db)
    with cli_errors(location):
        check_mnesis_database(location, must_exist=must_exist)
        yield config, location


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def format_tokens(count: int) -> str:
    """``12345`` → ``12,345``."""
    return f"{count:,}"


def format_bytes(size: int) -> str:
    """A human-readable byte size (``1.4 MB``)."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - unreachable


def format_time(ms: int) -> str:
    """Unix milliseconds → local ``YYYY-MM-DD HH:MM``."""
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def abbreviate(text: str, width: int = 80) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"
