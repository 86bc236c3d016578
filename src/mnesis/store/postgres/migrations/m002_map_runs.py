"""Item state of AgenticMap runs, so a crashed run can be resumed."""

from __future__ import annotations

__all__ = ["SQL"]

SQL = """
CREATE TABLE map_runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE map_items (
    run_id TEXT NOT NULL REFERENCES map_runs(id),
    idx INTEGER NOT NULL,
    input TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'running', 'completed', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    output TEXT,
    error TEXT,
    session_id TEXT REFERENCES sessions(id),
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX map_items_state_idx ON map_items (run_id, state);
"""
