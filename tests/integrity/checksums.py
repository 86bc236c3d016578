"""Checksums of a database file, read through a separate read-only connection.

They never depend on the store code under test.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3

import psycopg
from benchmarks.crash_trials import integrity_check

__all__ = [
    "HISTORY_TABLES",
    "LINEAGE_TABLES",
    "MESSAGE_MUTABLE_COLUMNS",
    "database_checksum",
    "history_checksum",
    "integrity_check",
    "lineage_rows",
    "table_rows",
]

HISTORY_TABLES = ("messages", "message_parts", "summaries")
LINEAGE_TABLES = ("summary_messages", "summary_parents")
MESSAGE_MUTABLE_COLUMNS = frozenset(
    {
        "tokens_input",
        "tokens_output",
        "tokens_cache_read",
        "tokens_cache_write",
        "tokens_total",
        "cost",
        "finish_reason",
        "token_estimate",
    }
)
"""The columns of ``messages`` the store may update (``update_message_tokens``)."""


def _read_only(db_path: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{os.path.abspath(db_path)}?mode=ro", uri=True, timeout=30)


def _digest(rows: list[tuple[object, ...]]) -> str:
    text = repr(sorted(rows, key=repr))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _is_url(db_path: str) -> bool:
    return db_path.startswith(("postgresql://", "postgres://"))


def _pg_rows(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]  # type: ignore[arg-type]


def table_rows(
    db_path: str, table: str, *, exclude: frozenset[str] = frozenset()
) -> list[tuple[object, ...]]:
    """Every row of ``table`` (columns in ``exclude`` left out), on either backend."""
    if _is_url(db_path):
        columns = [
            r[0]
            for r in _pg_rows(
                db_path,
                "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                f"current_schema() AND table_name = '{table}' ORDER BY ordinal_position",
            )
        ]
        wanted = ", ".join(c for c in columns if c not in exclude)
        return _pg_rows(db_path, f"SELECT {wanted} FROM {table}")
    conn = _read_only(db_path)
    try:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        wanted = ", ".join(c for c in columns if c not in exclude)
        return conn.execute(f"SELECT {wanted} FROM {table}").fetchall()
    finally:
        conn.close()


def database_checksum(db_path: str) -> dict[str, str]:
    """A digest of every row of every ordinary table (full-text shadow tables included
    on SQLite; on PostgreSQL every table of the schema, ``tsvector`` columns included)."""
    if _is_url(db_path):
        tables = [
            r[0]
            for r in _pg_rows(
                db_path,
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
            )
        ]
        return {t: _digest(_pg_rows(db_path, f"SELECT * FROM {t}")) for t in tables}
    conn = _read_only(db_path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
            )
        ]
        return {t: _digest(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}
    finally:
        conn.close()


def history_checksum(db_path: str, *, with_token_counts: bool = True) -> dict[str, str]:
    """Digests of ``messages``, ``message_parts`` and ``summaries``.

    ``with_token_counts=False`` leaves out the token, cost and finish-reason columns of
    ``messages``, the one mutation the store permits on a history row."""
    exclude = frozenset() if with_token_counts else MESSAGE_MUTABLE_COLUMNS
    return {
        table: _digest(
            table_rows(db_path, table, exclude=exclude if table == "messages" else frozenset())
        )
        for table in HISTORY_TABLES
    }


def lineage_rows(db_path: str) -> set[tuple[object, ...]]:
    """Every lineage edge, tagged with its table."""
    return {(table, *row) for table in LINEAGE_TABLES for row in table_rows(db_path, table)}
