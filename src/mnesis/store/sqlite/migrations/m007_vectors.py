"""Embedding vectors next to the rows they embed (SQLite); see ``mnesis.store.vectors``.

Derived data: no append-only triggers, rows are replaced when another model
re-embeds a text, and they go with their part or summary (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from mnesis.store.shared.schema import SQLITE, vector_tables

__all__ = ["SQL"]

SQL = "\n" + vector_tables(SQLITE)
