"""Item state of AgenticMap runs, so a crashed run can be resumed (SQLite)."""

from __future__ import annotations

from mnesis.store.shared.schema import SQLITE, map_run_tables

__all__ = ["SQL"]

SQL = f"""
-- Item state of AgenticMap runs, so a crashed run can be resumed.
{map_run_tables(SQLITE)}"""
