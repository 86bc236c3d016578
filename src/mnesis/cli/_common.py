"""What every command shares: consoles, error reporting, the database to open, formatting.

Error contract of the CLI: a :class:`~mnesis.errors.MnesisError` becomes one red line on
stderr and exit code 1; usage errors exit with 2 (typer's own handling). Nothing here is
library code: this is the only layer of mnesis that prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from mnesis.config import MnesisConfig
from mnesis.errors import MnesisError, MnesisStoreError, NotFoundError, StoreCorruptError

__all__ = [
    "DbOption",
    "JsonOption",
    "abbreviate",
    "check_mnesis_database",
    "cli_errors",
    "echo_json",
    "fail",
    "format_bytes",
    "format_time",
    "format_tokens",
    "resolve_config",
    "stderr_console",
    "stdout_console",
]

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH",
        help="SQLite database file (default: $MNESIS_DB_PATH, else ~/.mnesis/sessions.db).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]

_SQLITE_MAGIC = b"SQLite format 3\x00"


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
    """The configuration from the environment, with ``--db`` (if given) as the store path.

    Raises :class:`typer.BadParameter` (a usage error, exit code 2) for an empty ``--db``.
    """
    config = MnesisConfig.from_env()
    if db is not None:
        if not db.strip():
            raise typer.BadParameter("must be a non-empty path", param_hint="'--db'")
        config.store.db_path = db
    return config, config.store.db_path


def check_mnesis_database(path: str, *, must_exist: bool) -> None:
    """Refuse files mnesis must not open, before the store opens (and migrates) them.

    Opening a store creates and migrates the file, so the inspection commands check first
    that the file exists (``must_exist``) and every command checks that an existing file
    is a mnesis database, never another application's SQLite file.
    Raises :class:`~mnesis.errors.MnesisStoreError` / :class:`StoreCorruptError`.
    """
    if path == ":memory:":
        if must_exist:
            raise MnesisStoreError("an in-memory database holds no sessions; pass --db PATH")
        return
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.exists(full):
        if must_exist:
            raise MnesisStoreError(
                f"no database at {full}; create one with `mnesis demo --db {path}` "
                "or point --db / MNESIS_DB_PATH at an existing file"
            )
        return
    if os.path.isdir(full):
        raise StoreCorruptError(f"{full} is a directory, not a database file")
    try:
        with open(full, "rb") as handle:
            header = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise MnesisStoreError(f"cannot read {full}: {exc.strerror or exc}") from exc
    if not header:
        return  # an empty file: SQLite treats it as a new, empty database
    if header != _SQLITE_MAGIC:
        raise StoreCorruptError(f"{full} is not a database (no SQLite header)")
    try:
        conn = sqlite3.connect(f"file:{full}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreCorruptError(f"{full} is not a usable mnesis database: {exc}") from exc
    if tables and "_mnesis_migrations" not in tables:
        raise StoreCorruptError(
            f"{full} is a SQLite database of another application (no mnesis tables); "
            "mnesis will not write to it"
        )


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
