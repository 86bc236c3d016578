"""Embedding vectors next to the rows they embed (PostgreSQL, ``bytea``; no pgvector).

Derived data: no append-only triggers, rows are replaced when another model
re-embeds a text, and they go with their part or summary (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from mnesis.store.shared.schema import POSTGRES, vector_tables

__all__ = ["SQL"]

SQL = "\n" + vector_tables(POSTGRES)
