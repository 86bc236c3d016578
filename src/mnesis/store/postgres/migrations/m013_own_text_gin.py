"""Full-text indexes of a part's own text, and of summary messages (PostgreSQL).

The GIN index over ``search_tsv || context_tsv`` holds each conversation part's
neighbour context too, so words a question shares with a busy session match most of
its rows there: a candidate of a ``relevance`` search, which must hold its terms in
its own text, was checked among all of them (``port & inventory``: about 5,400 rows
at 100k messages, 525 of them holding both words in their own text). Two partial GIN
indexes over ``search_tsv`` alone, one for conversation parts (lexemes of weight A)
and one for tool input/output (weight D), hand over exactly the rows of either kind
whose own text holds the terms: no recheck, no weights in the query. The small
partial index of summary messages lets a search exclude their parts with one lookup
per statement instead of reading every candidate's message. No row changes.
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = """
CREATE INDEX message_parts_text_gin_idx ON message_parts USING gin (search_tsv)
    WITH (fastupdate = off) WHERE part_type <> 'tool';
CREATE INDEX message_parts_tool_gin_idx ON message_parts USING gin (search_tsv)
    WITH (fastupdate = off) WHERE part_type = 'tool';
CREATE INDEX messages_summary_idx ON messages (id) WHERE is_summary;
"""
