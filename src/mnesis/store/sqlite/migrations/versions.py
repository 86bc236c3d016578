"""SQLite schema migrations. Append new ones; never edit an applied migration."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from mnesis.store.sqlite.migrations import (
    m004_search_context,
    m005_text_once,
    m007_vectors,
    m008_bulk_fts,
    m009_context_unstored,
)

__all__ = ["MIGRATIONS", "Migration"]

Migration = str | Callable[[sqlite3.Connection], None]
"""A migration: an SQL script, or a function run inside the migration's transaction."""

_PART_TYPES = (
    "'text','reasoning','tool','patch','file','file_ref','subtask','compaction',"
    "'step_start','step_finish','snapshot','agent','retry'"
)

M001_INITIAL = f"""
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    parent_id TEXT REFERENCES sessions(id),
    model TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT 'default',
    system_prompt TEXT NOT NULL DEFAULT '',
    title TEXT,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed')),
    config TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX sessions_parent_idx ON sessions (parent_id);
CREATE INDEX sessions_created_idx ON sessions (created_at);

CREATE TABLE messages (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    is_summary INTEGER NOT NULL DEFAULT 0,
    agent TEXT NOT NULL DEFAULT 'default',
    model_id TEXT,
    provider_id TEXT,
    parent_id TEXT,
    created_at INTEGER NOT NULL,
    tokens_input INTEGER NOT NULL DEFAULT 0,
    tokens_output INTEGER NOT NULL DEFAULT 0,
    tokens_cache_read INTEGER NOT NULL DEFAULT 0,
    tokens_cache_write INTEGER NOT NULL DEFAULT 0,
    tokens_total INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    finish_reason TEXT,
    token_estimate INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, seq)
);

CREATE TABLE message_parts (
    id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES messages(id),
    session_id TEXT NOT NULL REFERENCES sessions(id),
    ordinal INTEGER NOT NULL,
    part_type TEXT NOT NULL CHECK (part_type IN ({_PART_TYPES})),
    content TEXT NOT NULL,
    text_content TEXT,
    tool_name TEXT,
    tool_call_id TEXT,
    tool_state TEXT CHECK (tool_state IN ('pending', 'running', 'completed', 'error')),
    compacted_at INTEGER,
    started_at INTEGER,
    completed_at INTEGER,
    token_estimate INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    UNIQUE (message_id, ordinal)
);
CREATE INDEX message_parts_session_idx ON message_parts (session_id);
CREATE INDEX message_parts_tool_call_idx ON message_parts (session_id, tool_call_id)
    WHERE tool_call_id IS NOT NULL;

CREATE TABLE summaries (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    depth INTEGER NOT NULL DEFAULT 0,
    level INTEGER NOT NULL CHECK (level BETWEEN 1 AND 3),
    content TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    file_ids TEXT NOT NULL DEFAULT '[]',
    message_id TEXT REFERENCES messages(id),
    span_start_message_id TEXT REFERENCES messages(id),
    span_end_message_id TEXT REFERENCES messages(id),
    source_message_count INTEGER NOT NULL DEFAULT 0,
    search_text TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX summaries_session_idx ON summaries (session_id, created_at);

CREATE TABLE summary_messages (
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    message_id TEXT NOT NULL REFERENCES messages(id),
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (summary_id, message_id)
) WITHOUT ROWID;
CREATE INDEX summary_messages_message_idx ON summary_messages (message_id);

CREATE TABLE summary_parents (
    summary_id TEXT NOT NULL REFERENCES summaries(id),
    parent_summary_id TEXT NOT NULL REFERENCES summaries(id),
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (summary_id, parent_summary_id),
    CHECK (summary_id <> parent_summary_id)
) WITHOUT ROWID;
CREATE INDEX summary_parents_parent_idx ON summary_parents (parent_summary_id);

CREATE TABLE context_items (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    position INTEGER NOT NULL,
    item_type TEXT NOT NULL CHECK (item_type IN ('message', 'summary')),
    message_id TEXT REFERENCES messages(id),
    summary_id TEXT REFERENCES summaries(id),
    tokens INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, position),
    CHECK (
        (item_type = 'message' AND message_id IS NOT NULL AND summary_id IS NULL) OR
        (item_type = 'summary' AND summary_id IS NOT NULL AND message_id IS NULL)
    )
) WITHOUT ROWID;
CREATE INDEX context_items_summary_idx ON context_items (session_id, position)
    WHERE item_type = 'summary';
CREATE INDEX context_items_message_idx ON context_items (message_id)
    WHERE message_id IS NOT NULL;

CREATE TABLE file_references (
    content_id TEXT PRIMARY KEY,
    file_id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    file_type TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    byte_size INTEGER,
    exploration_summary TEXT NOT NULL DEFAULT '',
    session_id TEXT,
    created_at INTEGER NOT NULL
);

CREATE TABLE compaction_locks (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    owner TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);

-- Full-text indexes: contentless (the text lives in message_parts / summaries and is
-- joined by rowid), kept in sync by the triggers below. The session_id column is
-- indexed as one token (the ID without its 'sess_' prefix), so a per-session search
-- intersects posting lists instead of filtering every match.
-- Porter stemming for English; CJK text is indexed with extra bigrams appended by
-- the store (see store/search_text.py).
CREATE VIRTUAL TABLE message_parts_fts USING fts5(
    text_content, tool_content, session_id, content='',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE summaries_fts USING fts5(
    search_text, session_id, content='',
    tokenize='porter unicode61 remove_diacritics 2'
);
-- Tool input/output is indexed in its own column so ranking can weigh what the user
-- and the assistant said above long tool logs that repeat a word many times.
CREATE TRIGGER message_parts_fts_insert AFTER INSERT ON message_parts
WHEN NEW.text_content IS NOT NULL BEGIN
    INSERT INTO message_parts_fts (rowid, text_content, tool_content, session_id)
        VALUES (
            NEW.rowid,
            CASE WHEN NEW.part_type = 'tool' THEN NULL ELSE NEW.text_content END,
            CASE WHEN NEW.part_type = 'tool' THEN NEW.text_content END,
            substr(NEW.session_id, 6)
        );
END;
CREATE TRIGGER message_parts_fts_update AFTER UPDATE OF text_content ON message_parts
WHEN OLD.text_content IS NOT NEW.text_content BEGIN
    INSERT INTO message_parts_fts (message_parts_fts, rowid, text_content, tool_content,
                                   session_id)
        SELECT 'delete', OLD.rowid,
            CASE WHEN OLD.part_type = 'tool' THEN NULL ELSE OLD.text_content END,
            CASE WHEN OLD.part_type = 'tool' THEN OLD.text_content END,
            substr(OLD.session_id, 6)
        WHERE OLD.text_content IS NOT NULL;
    INSERT INTO message_parts_fts (rowid, text_content, tool_content, session_id)
        SELECT NEW.rowid,
            CASE WHEN NEW.part_type = 'tool' THEN NULL ELSE NEW.text_content END,
            CASE WHEN NEW.part_type = 'tool' THEN NEW.text_content END,
            substr(NEW.session_id, 6)
        WHERE NEW.text_content IS NOT NULL;
END;
CREATE TRIGGER summaries_fts_insert AFTER INSERT ON summaries BEGIN
    INSERT INTO summaries_fts (rowid, search_text, session_id)
        VALUES (NEW.rowid, NEW.search_text, substr(NEW.session_id, 6));
END;

-- History is append-only: the database itself rejects rewrites.
CREATE TRIGGER messages_no_delete BEFORE DELETE ON messages BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: messages cannot be deleted');
END;
CREATE TRIGGER messages_immutable BEFORE UPDATE ON messages
WHEN NEW.id IS NOT OLD.id OR NEW.session_id IS NOT OLD.session_id OR NEW.seq IS NOT OLD.seq
    OR NEW.role IS NOT OLD.role OR NEW.is_summary IS NOT OLD.is_summary
    OR NEW.agent IS NOT OLD.agent OR NEW.model_id IS NOT OLD.model_id
    OR NEW.provider_id IS NOT OLD.provider_id OR NEW.parent_id IS NOT OLD.parent_id
    OR NEW.created_at IS NOT OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: only token counts, cost, finish_reason may change');
END;
CREATE TRIGGER message_parts_no_delete BEFORE DELETE ON message_parts BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: message parts cannot be deleted');
END;
CREATE TRIGGER message_parts_immutable BEFORE UPDATE ON message_parts
WHEN NEW.id IS NOT OLD.id OR NEW.message_id IS NOT OLD.message_id
    OR NEW.session_id IS NOT OLD.session_id OR NEW.ordinal IS NOT OLD.ordinal
    OR NEW.part_type IS NOT OLD.part_type OR NEW.created_at IS NOT OLD.created_at
    OR NEW.tool_name IS NOT OLD.tool_name OR NEW.tool_call_id IS NOT OLD.tool_call_id
    OR (OLD.compacted_at IS NOT NULL AND NEW.compacted_at IS NOT OLD.compacted_at)
    OR (OLD.tool_state IN ('completed', 'error') AND NEW.tool_state IS NOT OLD.tool_state)
    OR ((NEW.content IS NOT OLD.content OR NEW.text_content IS NOT OLD.text_content)
        AND NOT (OLD.part_type = 'tool' AND OLD.tool_state IN ('pending', 'running')))
BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: only tool status and tombstone may change');
END;
CREATE TRIGGER summaries_no_update BEFORE UPDATE ON summaries BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: summaries cannot be changed');
END;
CREATE TRIGGER summaries_no_delete BEFORE DELETE ON summaries BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: summaries cannot be deleted');
END;
CREATE TRIGGER summary_messages_no_change BEFORE UPDATE ON summary_messages BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: lineage cannot be changed');
END;
CREATE TRIGGER summary_messages_no_delete BEFORE DELETE ON summary_messages BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: lineage cannot be deleted');
END;
CREATE TRIGGER summary_parents_no_change BEFORE UPDATE ON summary_parents BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: lineage cannot be changed');
END;
CREATE TRIGGER summary_parents_no_delete BEFORE DELETE ON summary_parents BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: lineage cannot be deleted');
END;
CREATE TRIGGER sessions_no_delete BEFORE DELETE ON sessions BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: sessions cannot be deleted');
END;
"""

M002_MAP_RUNS = """
-- Item state of AgenticMap runs, so a crashed run can be resumed.
CREATE TABLE map_runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL,
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
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX map_items_state_idx ON map_items (run_id, state);
"""

M003_PURGE_IMPORTS = """
-- purge_session: the append-only guard admits deletes of a session only while a row of
-- purge_grants names it; the purge inserts and removes that row inside its own
-- transaction, so no other connection ever sees it.
CREATE TABLE purge_grants (session_id TEXT PRIMARY KEY);
DROP TRIGGER messages_no_delete;
CREATE TRIGGER messages_no_delete BEFORE DELETE ON messages
WHEN NOT EXISTS (SELECT 1 FROM purge_grants WHERE session_id = OLD.session_id) BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: messages cannot be deleted');
END;
DROP TRIGGER message_parts_no_delete;
CREATE TRIGGER message_parts_no_delete BEFORE DELETE ON message_parts
WHEN NOT EXISTS (SELECT 1 FROM purge_grants WHERE session_id = OLD.session_id) BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: message parts cannot be deleted');
END;
DROP TRIGGER summaries_no_delete;
CREATE TRIGGER summaries_no_delete BEFORE DELETE ON summaries
WHEN NOT EXISTS (SELECT 1 FROM purge_grants WHERE session_id = OLD.session_id) BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: summaries cannot be deleted');
END;
DROP TRIGGER summary_messages_no_delete;
CREATE TRIGGER summary_messages_no_delete BEFORE DELETE ON summary_messages
WHEN NOT EXISTS (SELECT 1 FROM purge_grants
    WHERE session_id = (SELECT session_id FROM summaries WHERE id = OLD.summary_id)) BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: lineage cannot be deleted');
END;
DROP TRIGGER summary_parents_no_delete;
CREATE TRIGGER summary_parents_no_delete BEFORE DELETE ON summary_parents
WHEN NOT EXISTS (SELECT 1 FROM purge_grants
    WHERE session_id = (SELECT session_id FROM summaries WHERE id = OLD.summary_id)) BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: lineage cannot be deleted');
END;
DROP TRIGGER sessions_no_delete;
CREATE TRIGGER sessions_no_delete BEFORE DELETE ON sessions
WHEN NOT EXISTS (SELECT 1 FROM purge_grants WHERE session_id = OLD.id) BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: sessions cannot be deleted');
END;

-- Transcript import progress: one row per imported file.
CREATE TABLE import_sources (
    source_key TEXT PRIMARY KEY,
    format TEXT NOT NULL,
    path TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    byte_offset INTEGER NOT NULL DEFAULT 0,
    lines INTEGER NOT NULL DEFAULT 0,
    fingerprint TEXT NOT NULL DEFAULT '',
    messages INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT '{}',
    updated_at INTEGER NOT NULL
);
CREATE INDEX import_sources_session_idx ON import_sources (session_id);
"""

MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_initial", M001_INITIAL),
    ("m002_map_runs", M002_MAP_RUNS),
    ("m003_purge_imports", M003_PURGE_IMPORTS),
    ("m004_search_context", m004_search_context.SQL),
    ("m005_text_once", m005_text_once.migrate),
    ("m007_vectors", m007_vectors.SQL),
    ("m008_bulk_fts", m008_bulk_fts.SQL),
    ("m009_context_unstored", m009_context_unstored.migrate),
]
