"""Explorer of SQL scripts: tables with their columns and the other DDL, from a line scan."""

from __future__ import annotations

import re
from pathlib import Path

from mnesis.files.explorers._common import LineReader, SummaryBuilder
from mnesis.files.explorers._format import clip, fmt_int, join_names, plural

__all__ = ["explore_sql"]

_SQL_NAME = (
    r"""(?:[\w$]+|"[^"]+"|`[^`]+`|\[[^\]]+\])(?:\s*\.\s*(?:[\w$]+|"[^"]+"|`[^`]+`|\[[^\]]+\]))*"""
)
_SQL_CREATE_TABLE = re.compile(
    r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:GLOBAL|LOCAL)\s+)?(?:TEMP(?:ORARY)?\s+|UNLOGGED\s+)?"
    rf"(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?({_SQL_NAME})",
    re.IGNORECASE,
)
_SQL_CREATE_OTHER = re.compile(
    r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:UNIQUE\s+)?(?:MATERIALIZED\s+)?"
    r"(INDEX|VIEW|TRIGGER|FUNCTION|PROCEDURE|SEQUENCE|TYPE|SCHEMA|EXTENSION)\s+"
    rf"(?:CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?({_SQL_NAME})",
    re.IGNORECASE,
)
_SQL_INSERT = re.compile(
    rf"^\s*INSERT\s+(?:OR\s+\w+\s+|IGNORE\s+)?INTO\s+({_SQL_NAME})", re.IGNORECASE
)
_SQL_LITERAL = re.compile(r"'(?:[^']|'')*'")
_SQL_CONSTRAINT = (
    "CONSTRAINT",
    "PRIMARY KEY",
    "FOREIGN KEY",
    "UNIQUE",
    "CHECK",
    "KEY ",
    "INDEX ",
    "EXCLUDE",
    "FULLTEXT",
)
_MAX_STATEMENT_CHARS = 64 * 1024


def explore_sql(path: Path, size: int) -> str:
    """``CREATE TABLE`` names with their columns, other objects, ``INSERT`` counts."""
    tables: list[tuple[str, str]] = []
    others: dict[str, list[str]] = {}
    inserts: dict[str, int] = {}
    statement: list[str] | None = None
    with LineReader(path) as reader:
        for line in reader:
            if statement is not None:
                statement.append(_sql_code(line))
                done = _sql_table(statement)
                if done is not None:
                    tables.append(done)
                    statement = None
                continue
            if match := _SQL_INSERT.match(line):
                name = _sql_unquote(match.group(1))
                if name in inserts or len(inserts) < 200:
                    inserts[name] = inserts.get(name, 0) + 1
                continue
            code = _sql_code(line)
            if match := _SQL_CREATE_TABLE.search(code):
                statement = [code[match.start() :]]
                done = _sql_table(statement)
                if done is not None:
                    tables.append(done)
                    statement = None
            elif match := _SQL_CREATE_OTHER.search(code):
                others.setdefault(match.group(1).upper(), []).append(_sql_unquote(match.group(2)))
        lines, truncated = reader.line_count, reader.truncated
    if statement is not None:
        tables.append(_sql_table(statement, final=True) or ("?", ""))
    return _render_sql(tables, others, inserts, lines, truncated)


def _sql_code(line: str) -> str:
    """``line`` without its ``--`` comment (a ``--`` inside a string literal is kept)."""
    masked = _SQL_LITERAL.sub(lambda m: "'" + " " * (len(m.group()) - 2) + "'", line)
    comment = masked.find("--")
    return line[:comment] if comment >= 0 else line


def _sql_unquote(name: str) -> str:
    return re.sub(r'["`\[\]]', "", re.sub(r"\s+", "", name))


def _sql_table(statement: list[str], *, final: bool = False) -> tuple[str, str] | None:
    """``(name, column list)`` once the statement is complete, else None."""
    text = " ".join(statement)
    match = _SQL_CREATE_TABLE.search(text)
    if match is None:  # pragma: no cover - the first line matched
        return ("?", "")
    name = _sql_unquote(match.group(1))
    rest = text[match.end() :]
    open_at = rest.find("(")
    semicolon = rest.find(";")
    if open_at < 0 or (0 <= semicolon < open_at):
        if semicolon >= 0 or final or len(text) > _MAX_STATEMENT_CHARS:
            return name, "(no column list)"
        return None
    depth = 0
    for index in range(open_at, len(rest)):
        char = rest[index]
        depth += (char == "(") - (char == ")")
        if depth == 0:
            return name, _sql_columns(rest[open_at + 1 : index])
    if final or len(text) > _MAX_STATEMENT_CHARS:
        return name, "(column list not parsed)"
    return None


def _sql_columns(body: str) -> str:
    items: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(body):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            items.append(body[start:index])
            start = index + 1
    items.append(body[start:])
    columns: list[str] = []
    constraints: list[str] = []
    for item in (" ".join(i.split()) for i in items):
        if not item:
            continue
        if item.upper().startswith(_SQL_CONSTRAINT):
            constraints.append(clip(item, 60))
        else:
            columns.append(clip(item, 50))
    text = f"{fmt_int(len(columns))} columns: {', '.join(columns)}"
    return text + (f"; {', '.join(constraints)}" if constraints else "")


def _render_sql(
    tables: list[tuple[str, str]],
    others: dict[str, list[str]],
    inserts: dict[str, int],
    lines: int,
    truncated: bool,
) -> str:
    out = SummaryBuilder()
    note = " (scan stopped early)" if truncated else ""
    out.add(f"SQL script: {plural(lines, 'line')}{note}, {fmt_int(len(tables))} CREATE TABLE")
    if tables:
        out.add("Tables:")
        for name, columns in tables:
            if not out.add(f"  {name}: {columns}", limit=700):
                break
    for kind, names in sorted(others.items()):
        title = "Indexes" if kind == "INDEX" else f"{kind.title()}s"
        out.add(f"{title} ({fmt_int(len(names))}): {join_names(names, 30)}")
    if inserts:
        counts = [f"{name} ({fmt_int(n)})" for name, n in inserts.items()]
        out.add(f"INSERT statements: {join_names(counts, 30)}")
    return out.text()
