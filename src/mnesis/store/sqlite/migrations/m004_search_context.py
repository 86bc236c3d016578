"""Neighbour context in the full-text index (SQLite).

Each conversation part (text, reasoning, file reference) gets a ``search_context``:
a first line with the speaker and date (``user 2026-11-17 tuesday november``), then
the text of the previous two conversation turns of its session, newest first, each
as ``role: text``. It is indexed in its own, lower-weighted FTS5 column, so the reply
to a question is found by the question's words. Tool parts get no context.

The migration rebuilds ``message_parts_fts`` with the new column and reindexes
every stored part.
"""

from __future__ import annotations

__all__ = ["SQL"]

_WEEKDAY = (
    "CASE strftime('%w', {t}) WHEN '0' THEN 'sunday' WHEN '1' THEN 'monday' "
    "WHEN '2' THEN 'tuesday' WHEN '3' THEN 'wednesday' WHEN '4' THEN 'thursday' "
    "WHEN '5' THEN 'friday' ELSE 'saturday' END"
)
_MONTH = (
    "CASE strftime('%m', {t}) WHEN '01' THEN 'january' WHEN '02' THEN 'february' "
    "WHEN '03' THEN 'march' WHEN '04' THEN 'april' WHEN '05' THEN 'may' WHEN '06' THEN 'june' "
    "WHEN '07' THEN 'july' WHEN '08' THEN 'august' WHEN '09' THEN 'september' "
    "WHEN '10' THEN 'october' WHEN '11' THEN 'november' ELSE 'december' END"
)


def context_sql(part: str) -> str:
    """The ``search_context`` of the part row aliased ``part`` (``NEW`` in a trigger)."""
    t = "me.created_at / 1000, 'unixepoch'"
    meta = (
        f"me.role || ' ' || date({t}) || ' ' || {_WEEKDAY.format(t=t)} || ' ' || "
        f"{_MONTH.format(t=t)}"
    )
    neighbours = (
        "SELECT group_concat(seg, char(10)) FROM (SELECT nm.role || ': ' || "
        "replace(substr(np.text_content, 1, 600), char(10), ' ') AS seg FROM messages nm "
        "JOIN message_parts np ON np.message_id = nm.id "
        f"WHERE nm.session_id = {part}.session_id AND nm.is_summary = 0 "
        "AND nm.seq < me.seq AND nm.seq >= me.seq - 6 "
        "AND np.part_type = 'text' AND np.text_content IS NOT NULL "
        "ORDER BY nm.seq DESC, np.ordinal LIMIT 2)"
    )
    return (
        f"(SELECT {meta} || coalesce(char(10) || ({neighbours}), '') "
        f"FROM messages me WHERE me.id = {part}.message_id)"
    )


_COLUMNS = (
    "CASE WHEN {p}.part_type = 'tool' THEN NULL ELSE {p}.text_content END, "
    "CASE WHEN {p}.part_type = 'tool' THEN {p}.text_content END, "
    "{context}, substr({p}.session_id, 6)"
)

SQL = f"""
DROP TRIGGER message_parts_fts_insert;
DROP TRIGGER message_parts_fts_update;
DROP TABLE message_parts_fts;
ALTER TABLE message_parts ADD COLUMN search_context TEXT;
CREATE VIRTUAL TABLE message_parts_fts USING fts5(
    text_content, tool_content, context, session_id, content='',
    tokenize='porter unicode61 remove_diacritics 2'
);
UPDATE message_parts SET search_context = {context_sql("message_parts")}
    WHERE part_type <> 'tool' AND text_content IS NOT NULL;
INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id)
    SELECT p.rowid, {_COLUMNS.format(p="p", context="p.search_context")}
    FROM message_parts p WHERE p.text_content IS NOT NULL;
CREATE TRIGGER message_parts_fts_insert AFTER INSERT ON message_parts
WHEN NEW.text_content IS NOT NULL BEGIN
    UPDATE message_parts SET search_context = {context_sql("NEW")}
        WHERE rowid = NEW.rowid AND NEW.part_type <> 'tool';
    INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id)
        SELECT p.rowid, {_COLUMNS.format(p="p", context="p.search_context")}
        FROM message_parts p WHERE p.rowid = NEW.rowid;
END;
CREATE TRIGGER message_parts_fts_update AFTER UPDATE OF text_content ON message_parts
WHEN OLD.text_content IS NOT NEW.text_content BEGIN
    INSERT INTO message_parts_fts (message_parts_fts, rowid, text_content, tool_content,
                                   context, session_id)
        SELECT 'delete', OLD.rowid,
            {_COLUMNS.format(p="OLD", context="OLD.search_context")}
        WHERE OLD.text_content IS NOT NULL;
    INSERT INTO message_parts_fts (rowid, text_content, tool_content, context, session_id)
        SELECT NEW.rowid, {_COLUMNS.format(p="NEW", context="NEW.search_context")}
        WHERE NEW.text_content IS NOT NULL;
END;
"""
