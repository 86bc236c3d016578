"""PostgreSQL schema migrations, applied in order. Append new ones; never edit an applied one."""

from __future__ import annotations

from mnesis.store.postgres.migrations import (
    m001_initial,
    m002_map_runs,
    m003_purge_imports,
    m004_search_context,
    m005_text_once,
    m007_vectors,
    m009_context_unstored,
)

__all__ = ["MIGRATIONS"]

MIGRATIONS: list[tuple[str, str]] = [
    ("m001_initial", m001_initial.SQL),
    ("m002_map_runs", m002_map_runs.SQL),
    ("m003_purge_imports", m003_purge_imports.SQL),
    ("m004_search_context", m004_search_context.SQL),
    ("m005_text_once", m005_text_once.SQL),
    ("m007_vectors", m007_vectors.SQL),
    ("m009_context_unstored", m009_context_unstored.SQL),
]
