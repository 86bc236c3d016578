"""The logical content of a SQLite store: every row of every table, read with ``sqlite3``.

Two dumps are equal exactly when no row was added, removed or changed, so a test can
prove that a rejected call wrote nothing.
"""

from __future__ import annotations

import sqlite3

__all__ = ["logical_dump"]


def logical_dump(db_path: str) -> dict[str, list[str]]:
    """Table name → its rows (``repr``, sorted), for every table of the database."""
    conn = sqlite3.connect(db_path)
    try:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        return {
            table: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{table}"'))
            for table in tables
        }
    finally:
        conn.close()
