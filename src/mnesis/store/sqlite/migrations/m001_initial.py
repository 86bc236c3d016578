"""The initial SQLite schema: history tables, full-text indexes and append-only triggers."""

from __future__ import annotations

from mnesis.store.shared import schema
from mnesis.store.shared.schema import SQLITE

__all__ = ["SQL"]

_PART_TYPES = (
    "'text','reasoning','tool','patch','file','file_ref','subtask','compaction',"
    "'step_start','step_finish','snapshot','agent','retry'"
)
_MESSAGES_NO_DELETE = schema.refusal(
    SQLITE, "messages_no_delete", "messages", "messages cannot be deleted"
)
_PARTS_NO_DELETE = schema.refusal(
    SQLITE, "message_parts_no_delete", "message_parts", "message parts cannot be deleted"
)
_CONTEXT_ITEMS = schema.context_items_table(
    SQLITE, "TEXT NOT NULL CHECK (item_type IN ('message', 'summary'))"
)

SQL = f"""
{schema.sessions_table(SQLITE)}
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

{schema.lineage_tables(SQLITE)}
{_CONTEXT_ITEMS}
{schema.file_tables(SQLITE)}
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
{_MESSAGES_NO_DELETE}
CREATE TRIGGER messages_immutable BEFORE UPDATE ON messages
WHEN NEW.id IS NOT OLD.id OR NEW.session_id IS NOT OLD.session_id OR NEW.seq IS NOT OLD.seq
    OR NEW.role IS NOT OLD.role OR NEW.is_summary IS NOT OLD.is_summary
    OR NEW.agent IS NOT OLD.agent OR NEW.model_id IS NOT OLD.model_id
    OR NEW.provider_id IS NOT OLD.provider_id OR NEW.parent_id IS NOT OLD.parent_id
    OR NEW.created_at IS NOT OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'mnesis append-only: only token counts, cost, finish_reason may change');
END;
{_PARTS_NO_DELETE}
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
{schema.history_refusals(SQLITE)}
"""
