"""Each session's model token usage kept as running sums (SQLite): ``session_usage``.

One row per session holding the sums of the ``tokens_*`` columns of its messages up to
``upto_seq`` (see :mod:`~mnesis.store.shared.usage`). Rows are filled when a session's
usage is first read, so the migration itself reads no history. A purge removes the row
with its session (``ON DELETE CASCADE``).
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = """
CREATE TABLE session_usage (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    upto_seq INTEGER NOT NULL,
    sum_input INTEGER NOT NULL,
    sum_output INTEGER NOT NULL,
    sum_cache_read INTEGER NOT NULL,
    sum_cache_write INTEGER NOT NULL,
    sum_total INTEGER NOT NULL
);
"""
