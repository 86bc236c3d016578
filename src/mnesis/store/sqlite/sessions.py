"""Sessions and file references in SQLite: the inserts (``SQLiteStore.sessions``; the
reads in :class:`~mnesis.store.shared.sessions.BaseSessions`)."""

from __future__ import annotations

import sqlite3

from mnesis.models.clock import now_ms
from mnesis.store.records import FileReference, SessionRecord
from mnesis.store.shared import sessions
from mnesis.store.shared.sessions import BaseSessions
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.rows import _get_file, insert_session

__all__ = ["SQLiteSessions"]


class SQLiteSessions(BaseSessions[SQLiteDatabase]):
    """Sessions and file references (``SQLiteStore.sessions``)."""

    async def create_session(self, record: SessionRecord) -> None:
        now = now_ms()

        def _insert(conn: sqlite3.Connection) -> None:
            insert_session(conn, record, now)

        await self.db.write(_insert)

    async def store_file_reference(self, ref: FileReference) -> FileReference:
        ref.created_at = ref.created_at or now_ms()

        def _store(conn: sqlite3.Connection) -> FileReference:
            conn.execute(
                sessions.FILE_INSERT.replace("INSERT", "INSERT OR IGNORE", 1),
                sessions.file_row(ref),
            )
            found = _get_file(conn, ref.content_id)
            assert found is not None
            return found

        return await self.db.write(_store)
