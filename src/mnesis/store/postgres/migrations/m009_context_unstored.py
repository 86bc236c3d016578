"""The neighbour context is indexed, not stored (PostgreSQL).

As on SQLite (``m009_context_unstored`` there): searches rebuild a hit's context (see
:mod:`~mnesis.store.shared.hit_contexts`), so ``message_parts.search_context`` need not
be kept. ``context_tsv`` stays what the search matches: it becomes a plain column
(its values kept), which a ``BEFORE INSERT`` trigger fills from the context the writer
gives before clearing it, so the text is never stored; existing rows lose theirs. No
row's ``tsvector`` changes. The space is reused by later rows after the next
(auto)vacuum.
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = r"""
ALTER TABLE message_parts ALTER COLUMN context_tsv DROP EXPRESSION;

CREATE FUNCTION mnesis_index_context() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.context_tsv := setweight(
        to_tsvector('english', replace(coalesce(NEW.search_context, ''), U&'\2063', ' ')), 'C');
    NEW.search_context := NULL;
    RETURN NEW;
END $$;

CREATE TRIGGER message_parts_index_context BEFORE INSERT ON message_parts FOR EACH ROW
    EXECUTE FUNCTION mnesis_index_context();

UPDATE message_parts SET search_context = NULL WHERE search_context IS NOT NULL;
"""
