"""Embedding vectors next to the rows they embed (SQLite); see ``mnesis.store.vectors``.

Derived data: no append-only triggers, rows are replaced when another model
re-embeds a text, and they go with their part or summary (``ON DELETE CASCADE``).
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = """
CREATE TABLE part_vectors (
    id INTEGER PRIMARY KEY,
    part_id TEXT NOT NULL UNIQUE REFERENCES message_parts(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX part_vectors_scan_idx ON part_vectors (session_id, model, id);
CREATE TABLE summary_vectors (
    id INTEGER PRIMARY KEY,
    summary_id TEXT NOT NULL UNIQUE REFERENCES summaries(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX summary_vectors_scan_idx ON summary_vectors (session_id, model, id);
"""
