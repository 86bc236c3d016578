"""A backend's ``integrity`` collaborator, engine-neutral (:class:`BaseIntegrity`), and
what both engines' subclasses share: the snapshot's queries, its assembly, and the rows
of a context rewrite."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from mnesis.store.records import ChainReport, EngineCheck, IntegritySnapshot, UsageCheck
from mnesis.store.shared.statements import DB, StorePart
from mnesis.store.shared.usage import FORGET, kept_check, usage_check

__all__ = [
    "CONTEXT_DELETE",
    "CONTEXT_INSERT",
    "NEXT_SOURCE_ORDINAL",
    "SOURCE_INSERT",
    "BaseIntegrity",
    "context_rows",
    "snapshot",
    "snapshot_queries",
    "wanted_files",
]

SummaryRow = tuple[str, str, list[str], str | None, str | None]


def snapshot_queries(summary_order: str, as_text: str = "") -> dict[str, str]:
    """The snapshot's queries of one session (``?``: its ID), by part; summaries in
    insertion order (``summary_order``: the backend's insertion-order column);
    ``as_text`` follows each enum column (PostgreSQL: ``::text``)."""
    return {
        "context": f"SELECT position, item_type{as_text}, message_id, summary_id "
        "FROM context_items WHERE session_id = ? ORDER BY position",
        "missing": "SELECT ci.position FROM context_items ci "
        "LEFT JOIN messages m ON m.id = ci.message_id "
        "LEFT JOIN summaries s ON s.id = ci.summary_id "
        "WHERE ci.session_id = ? AND m.id IS NULL AND s.id IS NULL",
        "messages": f"SELECT id, seq, role{as_text}, is_summary, token_estimate "
        "FROM messages WHERE session_id = ? ORDER BY seq",
        "summaries": f"SELECT id, kind{as_text}, file_ids, span_start_message_id, "
        f"span_end_message_id FROM summaries WHERE session_id = ? ORDER BY {summary_order}",
        "edges": "SELECT sm.summary_id, sm.message_id FROM summary_messages sm "
        "JOIN summaries s ON s.id = sm.summary_id WHERE s.session_id = ? "
        "ORDER BY sm.summary_id, sm.ordinal",
        "parents": "SELECT sp.summary_id, sp.parent_summary_id FROM summary_parents sp "
        "JOIN summaries s ON s.id = sp.summary_id WHERE s.session_id = ? "
        "ORDER BY sp.summary_id, sp.ordinal",
    }


def wanted_files(summaries: Sequence[SummaryRow]) -> list[str]:
    """The file IDs the summaries name, sorted."""
    return sorted({f for row in summaries for f in row[2]})


def snapshot(
    session_id: str,
    rows: Mapping[str, Sequence[Sequence[Any]]],
    summaries: list[SummaryRow],
    known: set[str],
) -> IntegritySnapshot:
    """The snapshot of the rows of :func:`snapshot_queries` (``summaries`` decoded)."""
    return IntegritySnapshot(
        session_id,
        [(r[0], r[1], r[2], r[3]) for r in rows["context"]],
        [(r[0], r[1], r[2], bool(r[3]), r[4]) for r in rows["messages"]],
        summaries,
        [(r[0], r[1]) for r in rows["edges"]],
        [(r[0], r[1]) for r in rows["parents"]],
        known,
        [r[0] for r in rows["missing"]],
    )


CONTEXT_DELETE = "DELETE FROM context_items WHERE session_id = ?"
CONTEXT_INSERT = (
    "INSERT INTO context_items (session_id, position, item_type, message_id, "
    "summary_id, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
NEXT_SOURCE_ORDINAL = (
    "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM summary_messages WHERE summary_id = ?"
)
SOURCE_INSERT = "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)"
"""Each backend adds its spelling of "unless the edge exists"."""


def context_rows(
    session_id: str, items: Sequence[tuple[str, str, int]], now: int
) -> list[tuple[Any, ...]]:
    """The values of :data:`CONTEXT_INSERT` for ``(item_type, item_id, tokens)`` items."""
    return [
        (
            session_id,
            index + 1,
            kind,
            item_id if kind == "message" else None,
            item_id if kind == "summary" else None,
            tokens,
            now,
        )
        for index, (kind, item_id, tokens) in enumerate(items)
    ]


class BaseIntegrity(StorePart[DB]):
    """What the integrity checker and its repairs need from a store
    (``store/sqlite/integrity.py``, ``store/postgres/integrity.py``)."""

    sum_fn: ClassVar[str] = "SUM"
    """The aggregate a usage read sums with (SQLite: ``TOTAL``, which cannot overflow)."""

    async def list_session_ids(self) -> list[str]:
        """Every session ID, oldest first."""
        rows = await self.db.rows("SELECT id FROM sessions ORDER BY created_at, id", ())
        return [r[0] for r in rows]

    async def check_usage(self, session_id: str) -> UsageCheck | None:
        """The session's kept usage sums beside a fresh sum up to the same message, read
        in one statement (None: none kept)."""
        if not self.db.usage_kept:
            return None
        rows = await self.db.rows(kept_check(self.sum_fn), (session_id,))
        return usage_check(rows[0]) if rows else None

    async def forget_usage(self, session_id: str) -> None:
        """Repair: drop the session's kept usage sums (the next read sums its messages
        again and keeps the result)."""
        if self.db.usage_kept:
            await self.db.change(FORGET, (session_id,))

    @abstractmethod
    async def integrity_snapshot(self, session_id: str) -> IntegritySnapshot:
        """The rows the integrity checker needs for one session, read consistently."""

    @abstractmethod
    async def verify_chain(self, session_id: str, expect: bytes | None = None) -> ChainReport:
        """The session's hash chain, checked link by link."""

    @abstractmethod
    async def engine_check(self, *, full: bool = False) -> EngineCheck:
        """What the database engine's own consistency check ran and found."""

    @abstractmethod
    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        """Repair: replace a session's context with ``(item_type, item_id, tokens)`` rows."""

    @abstractmethod
    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        """Repair: link an orphan leaf summary to its source messages."""

    @abstractmethod
    async def backup_to(self, path: str) -> None:
        """Write a consistent copy of the whole database to ``path``."""
