"""The initial PostgreSQL schema: the SQLite tables, in PostgreSQL's types.

Names and millisecond ``BIGINT`` timestamps are the SQLite backend's, so both behave
alike. Additions: enums for the closed vocabularies, ``key`` identity columns (the
stable integer that ``scan_text`` pages on, SQLite's ``rowid``) and ``tsvector``
columns with GIN indexes for full-text search.
"""

from __future__ import annotations

from mnesis.store.shared import schema
from mnesis.store.shared.schema import POSTGRES

__all__ = ["SQL"]

_TSV = "to_tsvector('english', replace({col}, U&'\\2063', ' '))"
"""The index of a text: U+2063 (the separator before the CJK bigrams the store appends,
see ``store/search_text.py``) is a letter to PostgreSQL's parser, so it becomes a space."""

_HISTORY = "sessions messages message_parts summaries summary_messages summary_parents".split()
"""The tables of the append-only history."""

_NO_TRUNCATE = "\n".join(
    f"CREATE TRIGGER history_no_truncate BEFORE TRUNCATE ON {table}\n"
    "    FOR EACH STATEMENT EXECUTE FUNCTION mnesis_reject('history cannot be truncated');"
    for table in _HISTORY
)

_MESSAGES_NO_DELETE = schema.refusal(
    POSTGRES, "messages_no_delete", "messages", "messages cannot be deleted"
)
_PARTS_NO_DELETE = schema.refusal(
    POSTGRES, "message_parts_no_delete", "message_parts", "message parts cannot be deleted"
)

_APPEND_ONLY = f"""
CREATE FUNCTION mnesis_reject() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'mnesis append-only: %', TG_ARGV[0] USING ERRCODE = 'P0001';
END $$;

CREATE FUNCTION mnesis_messages_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.session_id IS DISTINCT FROM OLD.session_id
        OR NEW.seq IS DISTINCT FROM OLD.seq OR NEW.role IS DISTINCT FROM OLD.role
        OR NEW.is_summary IS DISTINCT FROM OLD.is_summary
        OR NEW.agent IS DISTINCT FROM OLD.agent OR NEW.model_id IS DISTINCT FROM OLD.model_id
        OR NEW.provider_id IS DISTINCT FROM OLD.provider_id
        OR NEW.parent_id IS DISTINCT FROM OLD.parent_id
        OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.key IS DISTINCT FROM OLD.key
    THEN
        RAISE EXCEPTION 'mnesis append-only: only token counts, cost, finish_reason may change'
            USING ERRCODE = 'P0001';
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION mnesis_message_parts_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.message_id IS DISTINCT FROM OLD.message_id
        OR NEW.session_id IS DISTINCT FROM OLD.session_id
        OR NEW.ordinal IS DISTINCT FROM OLD.ordinal
        OR NEW.part_type IS DISTINCT FROM OLD.part_type
        OR NEW.created_at IS DISTINCT FROM OLD.created_at
        OR NEW.tool_name IS DISTINCT FROM OLD.tool_name
        OR NEW.tool_call_id IS DISTINCT FROM OLD.tool_call_id
        OR NEW.key IS DISTINCT FROM OLD.key
        OR (OLD.compacted_at IS NOT NULL AND NEW.compacted_at IS DISTINCT FROM OLD.compacted_at)
        OR (OLD.tool_state IN ('completed', 'error')
            AND NEW.tool_state IS DISTINCT FROM OLD.tool_state)
        OR ((NEW.content IS DISTINCT FROM OLD.content
             OR NEW.text_content IS DISTINCT FROM OLD.text_content)
            AND NOT (OLD.part_type = 'tool' AND OLD.tool_state IN ('pending', 'running')))
    THEN
        RAISE EXCEPTION 'mnesis append-only: only tool status and tombstone may change'
            USING ERRCODE = 'P0001';
    END IF;
    RETURN NEW;
END $$;

{_MESSAGES_NO_DELETE}
CREATE TRIGGER messages_immutable BEFORE UPDATE ON messages FOR EACH ROW
    EXECUTE FUNCTION mnesis_messages_update();
{_PARTS_NO_DELETE}
CREATE TRIGGER message_parts_immutable BEFORE UPDATE ON message_parts FOR EACH ROW
    EXECUTE FUNCTION mnesis_message_parts_update();
{schema.history_refusals(POSTGRES)}
-- TRUNCATE skips row triggers: history tables refuse it as a statement.
{_NO_TRUNCATE}
"""

_CONTEXT_ITEMS = schema.context_items_table(POSTGRES, "context_item_type NOT NULL") + (
    "CREATE INDEX context_items_summary_id_idx ON context_items (summary_id)\n"
    "    WHERE summary_id IS NOT NULL;\n"
)

SQL = f"""
CREATE TYPE message_role AS ENUM ('system', 'user', 'assistant', 'tool');
CREATE TYPE summary_kind AS ENUM ('leaf', 'condensed');
CREATE TYPE context_item_type AS ENUM ('message', 'summary');
CREATE TYPE message_part_type AS ENUM (
    'text', 'reasoning', 'tool', 'patch', 'file', 'file_ref', 'subtask', 'compaction',
    'step_start', 'step_finish', 'snapshot', 'agent', 'retry'
);
CREATE TYPE tool_state AS ENUM ('pending', 'running', 'completed', 'error');

{schema.sessions_table(POSTGRES)}
CREATE TABLE messages (
    key BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq BIGINT NOT NULL,
    role message_role NOT NULL,
    is_summary BOOLEAN NOT NULL DEFAULT false,
    agent TEXT NOT NULL DEFAULT 'default',
    model_id TEXT,
    provider_id TEXT,
    parent_id TEXT,
    created_at BIGINT NOT NULL,
    tokens_input BIGINT NOT NULL DEFAULT 0,
    tokens_output BIGINT NOT NULL DEFAULT 0,
    tokens_cache_read BIGINT NOT NULL DEFAULT 0,
    tokens_cache_write BIGINT NOT NULL DEFAULT 0,
    tokens_total BIGINT NOT NULL DEFAULT 0,
    cost DOUBLE PRECISION NOT NULL DEFAULT 0,
    finish_reason TEXT,
    token_estimate BIGINT NOT NULL DEFAULT 0,
    UNIQUE (session_id, seq)
);

-- Tool input/output is weighted D, conversation text A: ranking weighs what the user
-- and the assistant said above long tool logs that repeat a word many times.
CREATE TABLE message_parts (
    key BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES messages(id),
    session_id TEXT NOT NULL REFERENCES sessions(id),
    ordinal INTEGER NOT NULL,
    part_type message_part_type NOT NULL,
    content TEXT NOT NULL,
    text_content TEXT,
    tool_name TEXT,
    tool_call_id TEXT,
    tool_state tool_state,
    compacted_at BIGINT,
    started_at BIGINT,
    completed_at BIGINT,
    token_estimate BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    search_tsv tsvector GENERATED ALWAYS AS (
        setweight({_TSV.format(col="coalesce(text_content, '')")},
                  CASE WHEN part_type = 'tool' THEN 'D'::"char" ELSE 'A'::"char" END)
    ) STORED,
    UNIQUE (message_id, ordinal)
);
CREATE INDEX message_parts_session_idx ON message_parts (session_id, key);
CREATE INDEX message_parts_tool_call_idx ON message_parts (session_id, tool_call_id)
    WHERE tool_call_id IS NOT NULL;
CREATE INDEX message_parts_tsv_gin_idx ON message_parts USING gin (search_tsv);

CREATE TABLE summaries (
    key BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    kind summary_kind NOT NULL,
    depth INTEGER NOT NULL DEFAULT 0,
    level INTEGER NOT NULL CHECK (level BETWEEN 1 AND 3),
    content TEXT NOT NULL,
    token_count BIGINT NOT NULL,
    file_ids JSONB NOT NULL DEFAULT '[]'::jsonb,
    message_id TEXT REFERENCES messages(id),
    span_start_message_id TEXT REFERENCES messages(id),
    span_end_message_id TEXT REFERENCES messages(id),
    source_message_count INTEGER NOT NULL DEFAULT 0,
    search_text TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    search_tsv tsvector GENERATED ALWAYS AS (
        setweight({_TSV.format(col="search_text")}, 'A')
    ) STORED
);
CREATE INDEX summaries_session_idx ON summaries (session_id, key);
CREATE INDEX summaries_created_idx ON summaries (session_id, created_at);
CREATE INDEX summaries_tsv_gin_idx ON summaries USING gin (search_tsv);

{schema.lineage_tables(POSTGRES)}
{_CONTEXT_ITEMS}
{schema.file_tables(POSTGRES)}{_APPEND_ONLY}
"""
