"""Sessions and file references: the statements and rows both backends use."""

from __future__ import annotations

from typing import Any

from mnesis.store.codec import dumps
from mnesis.store.records import FileReference, SessionRecord
from mnesis.store.shared.sql import SESSION_COLUMNS, select_list

__all__ = [
    "FILE_INSERT",
    "SESSIONS_PAGE",
    "SESSION_INSERT",
    "SESSION_SELECT",
    "SESSION_STATUS",
    "file_row",
    "session_row",
]

_COLS = select_list(SESSION_COLUMNS)
SESSION_INSERT = f"INSERT INTO sessions ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
SESSION_SELECT = f"SELECT {_COLS} FROM sessions WHERE id = ?"
SESSIONS_PAGE = f"SELECT {_COLS} FROM sessions ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
SESSION_STATUS = "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?"
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
