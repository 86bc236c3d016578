"""PostgreSQL schema migrations, applied in order. Append new ones; never edit an applied one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mnesis.store.postgres.migrations import (
    m001_initial,
    m002_map_runs,
    m003_purge_imports,
    m004_search_context,
    m005_text_once,
    m007_vectors,
    m009_context_unstored,
    m011_history_chain,
    m012_gin_no_pending,
    m013_own_text_gin,
    m015_session_usage,
)

__all__ = ["MIGRATIONS", "Migration"]

Migration = str | Callable[[Any], Awaitable[None]]
"""A migration: an SQL script, or a function of the connection run inside the migration's
transaction."""

MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_initial", m001_initial.SQL),
    ("m002_map_runs", m002_map_runs.SQL),
    ("m003_purge_imports", m003_purge_imports.SQL),
    ("m004_search_context", m004_search_context.SQL),
    ("m005_text_once", m005_text_once.SQL),
    ("m007_vectors", m007_vectors.SQL),
    ("m009_context_unstored", m009_context_unstored.SQL),
    ("m011_history_chain", m011_history_chain.migrate),
    ("m012_gin_no_pending", m012_gin_no_pending.SQL),
    ("m013_own_text_gin", m013_own_text_gin.SQL),
    ("m015_session_usage", m015_session_usage.SQL),
]
