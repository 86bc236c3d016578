"""Neighbour context in the full-text index (PostgreSQL).

As on SQLite (``m004_search_context`` there): each conversation part (text, reasoning,
file reference) gets a ``search_context``, a first line with the speaker and date
(``user 2026-11-17 tuesday november``), then the text of the previous two
conversation turns of its session, newest first, each as ``role: text``. Its
``tsvector`` is weighted C (below conversation text A); search matches the
concatenation of both vectors through one GIN index. Existing rows are reindexed.
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = r"""
ALTER TABLE message_parts ADD COLUMN search_context TEXT;
ALTER TABLE message_parts ADD COLUMN context_tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', replace(coalesce(search_context, ''), U&'\2063', ' ')),
              'C')
) STORED;

CREATE FUNCTION mnesis_search_context(p_message TEXT) RETURNS TEXT
LANGUAGE sql STABLE AS $$
    SELECT me.role::text || ' '
        || to_char(to_timestamp(me.created_at / 1000.0) AT TIME ZONE 'UTC',
                   'YYYY-MM-DD')
        || ' ' || lower(trim(to_char(to_timestamp(me.created_at / 1000.0)
                                     AT TIME ZONE 'UTC', 'Day')))
        || ' ' || lower(trim(to_char(to_timestamp(me.created_at / 1000.0)
                                     AT TIME ZONE 'UTC', 'Month')))
        || coalesce(E'\n' || (
            SELECT string_agg(n.seg, E'\n' ORDER BY n.seq DESC, n.ordinal)
            FROM (
                SELECT nm.role::text || ': '
                           || replace(left(np.text_content, 600), E'\n', ' ') AS seg,
                       nm.seq, np.ordinal
                FROM messages nm JOIN message_parts np ON np.message_id = nm.id
                WHERE nm.session_id = me.session_id AND NOT nm.is_summary
                    AND nm.seq < me.seq AND nm.seq >= me.seq - 6
                    AND np.part_type = 'text' AND np.text_content IS NOT NULL
                ORDER BY nm.seq DESC, np.ordinal LIMIT 2
            ) n
        ), '')
    FROM messages me WHERE me.id = p_message
$$;

CREATE FUNCTION mnesis_set_search_context() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_context := mnesis_search_context(NEW.message_id);
    RETURN NEW;
END $$;

CREATE TRIGGER message_parts_search_context BEFORE INSERT ON message_parts FOR EACH ROW
    WHEN (NEW.part_type <> 'tool' AND NEW.text_content IS NOT NULL)
    EXECUTE FUNCTION mnesis_set_search_context();

UPDATE message_parts SET search_context = mnesis_search_context(message_id)
    WHERE part_type <> 'tool' AND text_content IS NOT NULL;

DROP INDEX message_parts_tsv_gin_idx;
CREATE INDEX message_parts_search_gin_idx ON message_parts
    USING gin ((search_tsv || context_tsv));
"""
