"""The time-range and lineage clauses of a full-text search, for both backends."""

from __future__ import annotations

from typing import Any

from mnesis.store.base import SearchFilter

__all__ = ["range_and_lineage"]


def range_and_lineage(where: SearchFilter, scope: str) -> tuple[list[str], list[Any]]:
    """``AND ...`` clauses (``?`` placeholders) bounding a search by creation time and,
    for messages, to those under ``where.under_summary`` (the statement must carry
    ``DOWN_CTE``; summaries are never under a summary in this sense), and their
    parameters. The session filter is the backend's: each picks its own plan for it."""
    clauses: list[str] = []
    args: list[Any] = []
    created = "m.created_at" if scope == "messages" else "s.created_at"
    if where.since is not None:
        clauses.append(f"AND {created} >= ?")
        args.append(where.since)
    if where.until is not None:
        clauses.append(f"AND {created} < ?")
        args.append(where.until)
    if where.under_summary is not None:
        if scope == "messages":
            clauses.append(
                "AND p.message_id IN (SELECT sm.message_id FROM summary_messages sm "
                "JOIN down ON sm.summary_id = down.id)"
            )
        else:
            clauses.append("AND 1 = 0")
    return clauses, args
