"""Name the row behind a UTF-8 decode error, within a time bound.

The driver reports a stored text that is no longer UTF-8 without saying which row holds
it. On that error path only, :func:`locate_undecodable` reads the text columns of the
store's tables as raw bytes (``text_factory = bytes``) and returns the first row whose
text does not decode; a progress handler stops the scan after ``budget_s`` seconds, so a
large file gets "not found in time" rather than an unbounded read.
"""

from __future__ import annotations

import sqlite3
import time

from mnesis.errors import StoreCorruptError

__all__ = ["is_undecodable", "locate_undecodable", "undecodable_error"]

_SKIP_PREFIXES = ("sqlite_", "_mnesis_")


def _text_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    columns = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    return [
        _text(column[1])
        for column in columns
        if "TEXT" in _text(column[2]).upper() or "CHAR" in _text(column[2]).upper()
    ]


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
    ).fetchall()
    names = [_text(row[0]) for row in rows]
    return [n for n in names if not n.startswith(_SKIP_PREFIXES) and "_fts" not in n]


def _first_undecodable(conn: sqlite3.Connection, table: str) -> str | None:
    columns = _text_columns(conn, table)
    if not columns:
        return None
    has_id = "id" in columns
    listed = ", ".join(f'"{c}"' for c in columns)
    for row in conn.execute(f'SELECT rowid, {listed} FROM "{table}"'):
        for name, value in zip(columns, row[1:], strict=True):
            if not isinstance(value, bytes):
                continue
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                key = f"id {_text(row[1 + columns.index('id')])}" if has_id else f"rowid {row[0]}"
                return f"{table} {key}, column {name}"
    return None


def locate_undecodable(conn: sqlite3.Connection, budget_s: float = 2.0) -> str | None:
    """``"table id …, column …"`` of the first stored text that is not UTF-8; ``None``
    when none is found within ``budget_s`` (or the schema itself cannot be read)."""
    deadline = time.monotonic() + budget_s
    factory = conn.text_factory
    conn.text_factory = bytes
    conn.set_progress_handler(lambda: int(time.monotonic() >= deadline), 10_000)
    try:
        for table in _tables(conn):
            found = _first_undecodable(conn, table)
            if found is not None:
                return found
        return None
    except sqlite3.Error:
        return None
    finally:
        conn.set_progress_handler(None, 0)
        conn.text_factory = factory


def undecodable_error(
    exc: UnicodeDecodeError | sqlite3.Error, path: str, conn: sqlite3.Connection | None
) -> StoreCorruptError:
    """A stored text (a row's, or the schema's own) that is no longer UTF-8, with the row
    that holds it when a bounded scan of ``conn`` finds it."""
    where = locate_undecodable(conn) if conn is not None else None
    place = f" in {where}" if where else ""
    hint = "" if where else "run `mnesis check --deep` to name the damaged row, and "
    return StoreCorruptError(
        f"{path}: a stored text{place} is not valid UTF-8 ({exc}); {hint}restore this "
        "database from a backup"
    )


def is_undecodable(exc: sqlite3.Error) -> bool:
    """Whether the driver's error is a stored text that does not decode."""
    return "could not decode to utf-8" in str(exc).lower()
