"""Each session's model token usage kept as running sums (PostgreSQL): ``session_usage``.

One row per session holding the sums of the ``tokens_*`` columns of its messages up to
``upto_seq`` (see :mod:`~mnesis.store.shared.usage`); ``NUMERIC`` so that no sum or
adjustment can overflow. Rows are filled when a session's usage is first read, so the
migration itself reads no history. A purge removes the row with its session
(``ON DELETE CASCADE``).
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = """
CREATE TABLE session_usage (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    upto_seq BIGINT NOT NULL,
    sum_input NUMERIC NOT NULL,
    sum_output NUMERIC NOT NULL,
    sum_cache_read NUMERIC NOT NULL,
    sum_cache_write NUMERIC NOT NULL,
    sum_total NUMERIC NOT NULL
);
"""
