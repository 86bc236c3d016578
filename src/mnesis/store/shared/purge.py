"""A backend's ``purge`` collaborator, engine-neutral (:class:`BasePurge`): purging a
session and recording import progress, with the statements and rows both engines use
(each wraps them in its own delete guard: grants on SQLite, a transaction-local setting
on PostgreSQL)."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from mnesis.store.records import ImportSource, PurgeReport
from mnesis.store.shared.statements import DB, StorePart

__all__ = [
    "DELETES",
    "DELETE_SESSION",
    "DESCENDANTS",
    "SESSION_EXISTS",
    "SOURCE_INSERT",
    "SOURCE_SELECT",
    "UNLINK_FILES",
    "UNLINK_MAP_ITEMS",
    "BasePurge",
    "import_source",
    "source_row",
]

SESSION_EXISTS = "SELECT 1 FROM sessions WHERE id = ?"
DESCENDANTS = (
    "WITH RECURSIVE tree(id, depth) AS (SELECT CAST(? AS TEXT), 0 UNION ALL "
    "SELECT s.id, t.depth + 1 FROM sessions s JOIN tree t ON s.parent_id = t.id) "
    "SELECT id FROM tree ORDER BY depth DESC, id"
)
"""The session and its sub-agent sessions, children before parents."""

_SUMMARY_IDS = "SELECT id FROM summaries WHERE session_id = ?"
DELETES: tuple[tuple[str, str], ...] = (
    ("context_items", "DELETE FROM context_items WHERE session_id = ?"),
    ("compaction_locks", "DELETE FROM compaction_locks WHERE session_id = ?"),
    ("import_sources", "DELETE FROM import_sources WHERE session_id = ?"),
    ("summary_parents", f"DELETE FROM summary_parents WHERE summary_id IN ({_SUMMARY_IDS})"),
    ("summary_messages", f"DELETE FROM summary_messages WHERE summary_id IN ({_SUMMARY_IDS})"),
    ("summaries", "DELETE FROM summaries WHERE session_id = ?"),
    ("message_parts", "DELETE FROM message_parts WHERE session_id = ?"),
    ("messages", "DELETE FROM messages WHERE session_id = ?"),
)
"""``(table, statement)`` of a session's rows, in the order they are deleted."""

UNLINK_MAP_ITEMS = "UPDATE map_items SET session_id = NULL WHERE session_id = ?"
UNLINK_FILES = "UPDATE file_references SET session_id = NULL WHERE session_id = ?"
DELETE_SESSION = "DELETE FROM sessions WHERE id = ?"

_SOURCE_COLUMNS = (
    "source_key, format, path, session_id, byte_offset, lines, fingerprint, messages, "
    "state, updated_at"
)
SOURCE_SELECT = f"SELECT {_SOURCE_COLUMNS} FROM import_sources WHERE source_key = ?"
SOURCE_INSERT = (
    f"INSERT INTO import_sources ({_SOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def import_source(row: Sequence[Any]) -> ImportSource:
    """An ``import_sources`` row (``state`` is JSON text)."""
    return ImportSource(
        source_key=row[0],
        format=row[1],
        path=row[2],
        session_id=row[3],
        byte_offset=int(row[4]),
        lines=int(row[5]),
        fingerprint=row[6],
        messages=int(row[7]),
        state=json.loads(row[8]),
        updated_at=int(row[9]),
    )


def source_row(source: ImportSource) -> tuple[Any, ...]:
    """The values of :data:`SOURCE_INSERT`."""
    return (
        source.source_key,
        source.format,
        source.path,
        source.session_id,
        source.byte_offset,
        source.lines,
        source.fingerprint,
        source.messages,
        json.dumps(source.state, ensure_ascii=False),
        source.updated_at,
    )


class BasePurge(StorePart[DB]):
    """Purging a session and recording import progress (``store/sqlite/purge.py``,
    ``store/postgres/purge.py``)."""

    @abstractmethod
    async def purge_session(self, session_id: str) -> PurgeReport:
        """Remove a session, its sub-agent sessions and every row of theirs, in one
        transaction (the one exception to append-only history)."""

    @abstractmethod
    async def get_import_source(self, source_key: str) -> ImportSource | None:
        """The import progress of a transcript file, if it was imported before."""

    @abstractmethod
    async def put_import_source(self, source: ImportSource) -> None:
        """Insert or replace the import progress of a transcript file."""
