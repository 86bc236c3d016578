"""Explorers of tables: CSV/TSV files and SQLite databases.

A CSV file of any size is explored in bounded memory: the dialect, the header and
the column types come from the first 64 KB; the rows are counted over the whole
file in 1 MB binary chunks, counting only newlines outside quoted fields (so a
quoted multi-line value is one row), at the speed of ``bytes.count``.

A SQLite database is opened read-only (``mode=ro``), never written to.
"""

from __future__ import annotations

import csv
import io
import re
import sqlite3
import time
from pathlib import Path

from mnesis.files.explorers._common import CHUNK_BYTES, ExplorationError, SummaryBuilder
from mnesis.files.explorers._format import clip, fmt_int

__all__ = ["explore_csv", "explore_sqlite", "explore_tsv"]

_SAMPLE_BYTES = 64 * 1024
_SNIFF_CHARS = 32 * 1024
_SAMPLE_ROWS = 1_000
_MAX_COLUMNS = 60
_MAX_TABLES = 50
_COUNT_SECONDS = 2.0
"""Time all ``count(*)`` queries of one database may take together."""

_INTEGER = re.compile(r"^[+-]?\d+$")
_DECIMAL = re.compile(r"^[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$"
)
_BOOLEAN = frozenset({"true", "false", "yes", "no", "t", "f", "y", "n"})


def explore_csv(path: Path, size: int) -> str:
    """Columns with inferred types, row count, delimiter and header."""
    return _explore_delimited(path, "CSV", None)


def explore_tsv(path: Path, size: int) -> str:
    """Columns with inferred types and the row count of a tab-separated file."""
    return _explore_delimited(path, "TSV", "\t")


def _explore_delimited(path: Path, label: str, delimiter: str | None) -> str:
    with open(path, "rb") as handle:
        head = handle.read(_SAMPLE_BYTES)
    text = head.decode("utf-8-sig", errors="replace")
    if len(head) == _SAMPLE_BYTES and "\n" in text:
        text = text[: text.rfind("\n") + 1]  # drop the row the sample cut in two
    if not text.strip():
        raise ExplorationError("the file is empty")
    dialect = _sniff(text, delimiter)
    rows = list(_first_rows(text, dialect))
    if not rows:
        raise ExplorationError("no rows could be read")
    has_header = _looks_like_header(rows)
    if not has_header:
        try:
            has_header = csv.Sniffer().has_header(text[:_SNIFF_CHARS])
        except csv.Error:
            has_header = False
    records = _count_records(path, dialect)
    header = rows[0] if has_header else []
    body = rows[1:] if has_header else rows
    width = max(len(row) for row in rows)
    shown_delimiter = {"\t": "tab", " ": "space"}.get(dialect.delimiter, dialect.delimiter)
    data_rows = records - 1 if has_header else records
    out = SummaryBuilder()
    out.add(
        f"{label}: {fmt_int(width)} columns, {fmt_int(max(0, data_rows))} data rows"
        f"{' (plus a header row)' if has_header else ' (no header row detected)'}; "
        f"delimiter {shown_delimiter!r}"
    )
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        out.add(f"Row widths vary in the first rows: {min(widths)} to {max(widths)} fields")
    out.add(f"Columns (types from the first {fmt_int(len(body))} data rows):")
    for index in range(min(width, _MAX_COLUMNS)):
        name = header[index] if index < len(header) and header[index].strip() else ""
        values = [row[index] for row in body if index < len(row)]
        column = clip(name.strip(), 60) if name else f"column {index + 1}"
        out.add(f"  {index + 1}. {column}: {_column_type(values)}")
    if width > _MAX_COLUMNS:
        out.add(f"  … {fmt_int(width - _MAX_COLUMNS)} more columns")
    return out.text()


def _looks_like_header(rows: list[list[str]]) -> bool:
    """A first row of distinct non-numeric names above a column of numbers or dates."""
    first, body = rows[0], rows[1:]
    names = [cell.strip() for cell in first]
    if not body or not all(names) or len(set(names)) != len(names):
        return False
    if any(_DECIMAL.match(name) or _DATE.match(name) for name in names):
        return False
    for index in range(len(first)):
        values = [row[index].strip() for row in body if index < len(row) and row[index].strip()]
        if values and all(_DECIMAL.match(v) or _DATE.match(v) for v in values):
            return True
    return False


def _sniff(text: str, delimiter: str | None) -> type[csv.Dialect]:
    if delimiter is not None:

        class _Forced(csv.excel):
            pass

        _Forced.delimiter = delimiter
        return _Forced
    try:
        return csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def _first_rows(text: str, dialect: type[csv.Dialect]) -> list[list[str]]:
    rows: list[list[str]] = []
    try:
        for row in csv.reader(io.StringIO(text), dialect):
            if row:
                rows.append(row)
            if len(rows) > _SAMPLE_ROWS:
                break
    except csv.Error as exc:
        if not rows:
            raise ExplorationError(f"not readable as delimited text: {exc}") from None
    return rows


def _count_records(path: Path, dialect: type[csv.Dialect]) -> int:
    """Count records: newlines outside quoted fields, plus an unterminated last line."""
    quote = (dialect.quotechar or "").encode()
    quoting = dialect.quoting != csv.QUOTE_NONE and len(quote) == 1
    records = 0
    inside = 0  # 1 while inside a quoted field
    last = b"\n"
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            last = chunk[-1:]
            if not quoting or quote not in chunk:
                if not inside:
                    records += chunk.count(b"\n")
                continue
            pieces = chunk.split(quote)
            # pieces alternate outside/inside quotes; a doubled quote ("") flips twice.
            records += b"".join(pieces[inside::2]).count(b"\n")
            inside = (inside + len(pieces) - 1) & 1
    if last != b"\n":
        records += 1
    return records


def _column_type(values: list[str]) -> str:
    present = [v.strip() for v in values if v.strip()]
    empty = len(values) - len(present)
    if not present:
        return "empty"
    kind = "text"
    for name, test in (
        ("integer", _INTEGER.match),
        ("decimal", _DECIMAL.match),
        ("date", _DATE.match),
        ("datetime", _DATETIME.match),
        ("boolean", lambda v: v.lower() in _BOOLEAN),
    ):
        if all(test(v) for v in present):
            kind = name
            break
    example = clip(present[0], 40)
    shown = example if kind != "text" else repr(example)
    blanks = f", {fmt_int(empty)} empty" if empty else ""
    return f"{kind}{blanks}, e.g. {shown}"


# -- SQLite --------------------------------------------------------------------
def explore_sqlite(path: Path, size: int) -> str:
    """Tables with their columns and row counts, views, indexes and triggers."""
    conn = _open_read_only(path)
    try:
        objects = conn.execute(
            "SELECT type, name, tbl_name FROM sqlite_master "
            "WHERE type IN ('table', 'view', 'index', 'trigger') ORDER BY type, name"
        ).fetchall()
        out = SummaryBuilder()
        tables = [name for kind, name, _ in objects if kind == "table"]
        counts = []
        for kind, plural in (("table", "tables"), ("view", "views"), ("index", "indexes")):
            number = sum(1 for k, _, _ in objects if k == kind)
            counts.append(f"{fmt_int(number)} {plural if number != 1 else kind}")
        out.add(f"SQLite database: {', '.join(counts)}")
        deadline = time.monotonic() + _COUNT_SECONDS
        for name in tables[:_MAX_TABLES]:
            columns = _columns(conn, name)
            rows = _row_count(conn, name, deadline)
            out.add(f"  {name} ({rows} rows): {columns}", limit=700)
        if len(tables) > _MAX_TABLES:
            out.add(f"  … {fmt_int(len(tables) - _MAX_TABLES)} more tables")
        for kind, title in (("view", "Views"), ("index", "Indexes"), ("trigger", "Triggers")):
            names = [n if kind == "view" else f"{n} (on {t})" for k, n, t in objects if k == kind]
            if names:
                shown = ", ".join(names[:30]) + (", …" if len(names) > 30 else "")
                out.add(f"{title}: {shown}")
        return out.text()
    except sqlite3.Error as exc:
        raise ExplorationError(f"not a readable SQLite database: {exc}") from None
    finally:
        conn.close()


def _open_read_only(path: Path) -> sqlite3.Connection:
    uri = path.absolute().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=1.0)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.Error:
        pass
    # A WAL database in a read-only directory cannot create its -shm file; read it as
    # an immutable snapshot instead.
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=1.0)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.Error as exc:
        raise ExplorationError(f"not a readable SQLite database: {exc}") from None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(conn: sqlite3.Connection, table: str) -> str:
    try:
        info = conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
    except sqlite3.Error:
        return "(columns unavailable)"
    parts = []
    for _, name, kind, notnull, _, pk in info[:_MAX_COLUMNS]:
        flags = (" PK" if pk else "") + (" NOT NULL" if notnull and not pk else "")
        parts.append(f"{name} {kind or 'ANY'}{flags}")
    more = f", … {len(info) - _MAX_COLUMNS} more" if len(info) > _MAX_COLUMNS else ""
    return ", ".join(parts) + more


def _row_count(conn: sqlite3.Connection, table: str, deadline: float) -> str:
    if time.monotonic() >= deadline:
        return "?"
    conn.set_progress_handler(lambda: int(time.monotonic() >= deadline), 10_000)
    try:
        row = conn.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()
        return fmt_int(int(row[0]))
    except sqlite3.Error:  # interrupted at the deadline, or a virtual table without its module
        return "?"
    finally:
        conn.set_progress_handler(None, 0)
