"""Full-text GIN indexes without a pending list (PostgreSQL).

A GIN index with ``fastupdate`` (PostgreSQL's default) appends new rows to a pending
list, merged into the index only by (auto)vacuum or once it outgrows
``gin_pending_list_limit`` (4 MB). Every search reads the whole list, and the planner,
costing that read, prefers to test ``search_tsv || context_tsv`` on every row of the
session instead: on a freshly written session of 1,500 messages a ``grep`` took about
350 ms. Without the list each insert updates the index itself (a slower append, a
search that reads only its terms' postings); the rows already pending are merged now.
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = """
ALTER INDEX message_parts_search_gin_idx SET (fastupdate = off);
ALTER INDEX summaries_tsv_gin_idx SET (fastupdate = off);
SELECT gin_clean_pending_list('message_parts_search_gin_idx'::regclass);
SELECT gin_clean_pending_list('summaries_tsv_gin_idx'::regclass);
"""
