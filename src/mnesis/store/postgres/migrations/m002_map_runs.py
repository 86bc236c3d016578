"""Item state of AgenticMap runs, so a crashed run can be resumed."""

from __future__ import annotations

from mnesis.store.shared.schema import POSTGRES, map_run_tables

__all__ = ["SQL"]

SQL = "\n" + map_run_tables(POSTGRES)
