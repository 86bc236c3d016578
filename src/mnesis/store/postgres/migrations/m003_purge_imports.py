"""``purge_session`` and transcript import progress.

The append-only delete guard admits a delete only inside a purge: the purge sets the
transaction-local ``mnesis.purge_session`` to the session it removes, so the guard
stays in force for every other session and every other transaction.
"""

from __future__ import annotations

from mnesis.store.shared.schema import DELETE_GUARDED, POSTGRES, import_sources

__all__ = ["SQL"]

_TRIGGERS = "\n".join(
    f"DROP TRIGGER {table}_no_delete ON {table};\n"
    f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} FOR EACH ROW\n"
    f"    EXECUTE FUNCTION mnesis_reject_delete('{message}');"
    for table, message in DELETE_GUARDED
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

{import_sources(POSTGRES)}"""
