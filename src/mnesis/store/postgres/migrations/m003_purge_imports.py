"""``purge_session`` and transcript import progress.

The append-only delete guard admits a delete only inside a purge: the purge sets the
transaction-local ``mnesis.purge_session`` to the session it removes, so the guard
stays in force for every other session and every other transaction.
"""

from __future__ import annotations

__all__ = ["SQL"]

_TABLES = (
    ("messages", "messages cannot be deleted"),
    ("message_parts", "message parts cannot be deleted"),
    ("summaries", "summaries cannot be deleted"),
    ("summary_messages", "lineage cannot be deleted"),
    ("summary_parents", "lineage cannot be deleted"),
    ("sessions", "sessions cannot be deleted"),
)

_TRIGGERS = "\n".join(
    f"DROP TRIGGER {table}_no_delete ON {table};\n"
    f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} FOR EACH ROW\n"
    f"    EXECUTE FUNCTION mnesis_reject_delete('{message}');"
    for table, message in _TABLES
)

SQL = f"""
CREATE FUNCTION mnesis_reject_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    granted TEXT := current_setting('mnesis.purge_session', true);
    owner TEXT;
BEGIN
    IF granted IS NOT NULL AND granted <> '' THEN
        IF TG_TABLE_NAME = 'sessions' THEN
            owner := to_jsonb(OLD) ->> 'id';
        ELSIF TG_TABLE_NAME IN ('summary_messages', 'summary_parents') THEN
            SELECT session_id INTO owner FROM summaries
                WHERE id = to_jsonb(OLD) ->> 'summary_id';
        ELSE
            owner := to_jsonb(OLD) ->> 'session_id';
        END IF;
        IF owner = granted THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'mnesis append-only: %', TG_ARGV[0] USING ERRCODE = 'P0001';
END $$;
{_TRIGGERS}

CREATE TABLE import_sources (
    source_key TEXT PRIMARY KEY,
    format TEXT NOT NULL,
    path TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    byte_offset BIGINT NOT NULL DEFAULT 0,
    lines BIGINT NOT NULL DEFAULT 0,
    fingerprint TEXT NOT NULL DEFAULT '',
    messages BIGINT NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT '{{}}',
    updated_at BIGINT NOT NULL
);
CREATE INDEX import_sources_session_idx ON import_sources (session_id);
"""
