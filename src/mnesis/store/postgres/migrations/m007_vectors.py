"""Embedding vectors next to the rows they embed (PostgreSQL, ``bytea``; no pgvector).

Derived data: no append-only triggers, rows are replaced when another model
re-embeds a text, and they go with their part or summary (``ON DELETE CASCADE``).
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = """
CREATE TABLE part_vectors (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    part_id TEXT NOT NULL UNIQUE REFERENCES message_parts(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    model TEXT NOT NULL,
    vector BYTEA NOT NULL
);
CREATE INDEX part_vectors_scan_idx ON part_vectors (session_id, model, id);
CREATE TABLE summary_vectors (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    summary_id TEXT NOT NULL UNIQUE REFERENCES summaries(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    model TEXT NOT NULL,
    vector BYTEA NOT NULL
);
CREATE INDEX summary_vectors_scan_idx ON summary_vectors (session_id, model, id);
"""
