"""Sessions and file references in PostgreSQL: the inserts (``PostgresStore.sessions``;
the reads in :class:`~mnesis.store.shared.sessions.BaseSessions`)."""

from __future__ import annotations

from mnesis.errors import SessionNotFoundError
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import fetch_one, get_file, now_ms
from mnesis.store.records import FileReference, SessionRecord
from mnesis.store.shared import sessions as shared
from mnesis.store.shared.purge import SESSION_EXISTS
from mnesis.store.shared.sessions import BaseSessions
from mnesis.store.shared.sql import pg

__all__ = ["PostgresSessions"]


class PostgresSessions(BaseSessions[PostgresDatabase]):
    """Sessions and file references (``PostgresStore.sessions``)."""

    async def create_session(self, record: SessionRecord) -> None:
        now = now_ms()
        record.created_at = record.created_at or now
        record.updated_at = record.updated_at or now

        async def _insert(conn: Conn) -> None:
            if record.parent_id is not None and not await fetch_one(
                conn, pg(SESSION_EXISTS), (record.parent_id,)
            ):
                raise SessionNotFoundError(record.parent_id)
            await conn.execute(pg(shared.SESSION_INSERT), shared.session_row(record))

        await self.db.write(_insert)

    async def store_file_reference(self, ref: FileReference) -> FileReference:
        ref.created_at = ref.created_at or now_ms()

        async def _store(conn: Conn) -> FileReference:
            await conn.execute(
                pg(shared.FILE_INSERT) + " ON CONFLICT DO NOTHING", shared.file_row(ref)
            )
            found = await get_file(conn, ref.content_id)
            assert found is not None
            return found

        return await self.db.write(_store)
