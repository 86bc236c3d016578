"""A backend's ``sessions`` collaborator, engine-neutral (:class:`BaseSessions`): sessions
and file references, with the statements and rows both engines use; the reads and
updates are single statements written here once, each engine's subclass gives the
inserts (which check before they insert, each its own way)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Literal

from mnesis.errors import SessionNotFoundError
from mnesis.models.clock import now_ms
from mnesis.store.codec import dumps
from mnesis.store.records import FileReference, SessionRecord
from mnesis.store.shared.rows import session_record
from mnesis.store.shared.sql import FILE_BY_PATH, FILE_SELECT, SESSION_COLUMNS, select_list
from mnesis.store.shared.statements import DB, StorePart

__all__ = [
    "FILE_INSERT",
    "SESSIONS_PAGE",
    "SESSION_CONFIG",
    "SESSION_INSERT",
    "SESSION_SELECT",
    "SESSION_STATUS",
    "BaseSessions",
    "file_row",
    "session_row",
]

_COLS = select_list(SESSION_COLUMNS)
SESSION_INSERT = f"INSERT INTO sessions ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
SESSION_SELECT = f"SELECT {_COLS} FROM sessions WHERE id = ?"
SESSIONS_PAGE = f"SELECT {_COLS} FROM sessions ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
SESSION_STATUS = "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?"
SESSION_CONFIG = "UPDATE sessions SET config = ?, updated_at = ? WHERE id = ?"
FILE_INSERT = (
    "INSERT INTO file_references (content_id, file_id, path, file_type, "
    "token_count, byte_size, exploration_summary, session_id, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
"""Each backend adds its spelling of "unless the content is already stored"."""


def session_row(record: SessionRecord) -> tuple[Any, ...]:
    """The values of :data:`SESSION_INSERT`."""
    return (
        record.id,
        record.model,
        record.agent,
        record.parent_id,
        record.system_prompt,
        record.title,
        record.status,
        record.created_at,
        record.updated_at,
        dumps(record.config) if record.config is not None else None,
    )


def file_row(ref: FileReference) -> tuple[Any, ...]:
    """The values of :data:`FILE_INSERT`."""
    return (
        ref.content_id,
        ref.file_id,
        ref.path,
        ref.file_type,
        ref.token_count,
        ref.byte_size,
        ref.exploration_summary,
        ref.session_id,
        ref.created_at,
    )


class BaseSessions(StorePart[DB]):
    """Sessions and file references: ``get_session``, ``list_sessions``,
    ``set_session_status``, ``set_session_config``, ``get_file_reference`` and
    ``get_file_reference_by_path`` written once; the inserts per engine."""

    @abstractmethod
    async def create_session(self, record: SessionRecord) -> None:
        """See :meth:`~mnesis.store.base.StoreBackend.create_session`."""

    @abstractmethod
    async def store_file_reference(self, ref: FileReference) -> FileReference:
        """See :meth:`~mnesis.store.base.StoreBackend.store_file_reference`."""

    async def get_session(self, session_id: str) -> SessionRecord:
        rows = await self.db.rows(SESSION_SELECT, (session_id,))
        if not rows:
            raise SessionNotFoundError(session_id)
        return session_record(rows[0])

    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionRecord]:
        return [session_record(r) for r in await self.db.rows(SESSIONS_PAGE, (limit, offset))]

    async def set_session_status(
        self, session_id: str, status: Literal["active", "closed"]
    ) -> None:
        if await self.db.change(SESSION_STATUS, (status, now_ms(), session_id)) == 0:
            raise SessionNotFoundError(session_id)

    async def set_session_config(self, session_id: str, config: dict[str, Any]) -> None:
        change = (dumps(config), now_ms(), session_id)
        if await self.db.change(SESSION_CONFIG, change) == 0:
            raise SessionNotFoundError(session_id)

    async def get_file_reference(self, content_or_file_id: str) -> FileReference | None:
        rows = await self.db.rows(FILE_SELECT, (content_or_file_id,) * 2)
        return FileReference(*rows[0]) if rows else None

    async def get_file_reference_by_path(self, path: str) -> FileReference | None:
        rows = await self.db.rows(FILE_BY_PATH, (path,))
        return FileReference(*rows[0]) if rows else None
