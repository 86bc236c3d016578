"""SQLite schema migrations. Append new ones; never edit an applied migration."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from mnesis.store.sqlite.migrations import (
    m004_search_context,
    m005_text_once,
    m007_vectors,
    m008_bulk_fts,
    m009_context_unstored,
    m010_context_keys,
    m011_history_chain,
    m015_session_usage,
)
from mnesis.store.sqlite.migrations.m001_initial import SQL as M001_INITIAL
from mnesis.store.sqlite.migrations.m002_map_runs import SQL as M002_MAP_RUNS
from mnesis.store.sqlite.migrations.m003_purge_imports import SQL as M003_PURGE_IMPORTS

__all__ = ["MIGRATIONS", "Migration"]

Migration = str | Callable[[sqlite3.Connection], None]
"""A migration: an SQL script, or a function run inside the migration's transaction."""

MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_initial", M001_INITIAL),
    ("m002_map_runs", M002_MAP_RUNS),
    ("m003_purge_imports", M003_PURGE_IMPORTS),
    ("m004_search_context", m004_search_context.SQL),
    ("m005_text_once", m005_text_once.migrate),
    ("m007_vectors", m007_vectors.SQL),
    ("m008_bulk_fts", m008_bulk_fts.SQL),
    ("m009_context_unstored", m009_context_unstored.migrate),
    ("m010_context_keys", m010_context_keys.migrate),
    ("m011_history_chain", m011_history_chain.migrate),
    ("m015_session_usage", m015_session_usage.SQL),
]
