"""The neighbour context computed by the writer (PostgreSQL).

``search_context`` is written by the store with the row (see
:mod:`mnesis.store.shared.search_context`), as on SQLite (``m005_text_once`` there):
the ``BEFORE INSERT`` trigger that computed it with a query per part is dropped.
Rows written from now on also store each part's text once (the ``content`` JSON leaves
out what ``text_content`` holds, :mod:`mnesis.store.shared.part_text`); rows written
before keep their full JSON and decode as they are.
"""

from __future__ import annotations

__all__ = ["SQL"]

SQL = r"""
DROP TRIGGER message_parts_search_context ON message_parts;
DROP FUNCTION mnesis_set_search_context();
DROP FUNCTION mnesis_search_context(TEXT);
"""
