"""PostgreSQL: :meth:`~mnesis.store.base.StoreBackend.purge_session` and import progress.

A purge runs in one transaction; before deleting each session's rows it sets the
transaction-local ``mnesis.purge_session`` to that session, the one value the
append-only delete guard (migration ``m003_purge_imports``) admits.
"""

from __future__ import annotations

from mnesis.errors import SessionNotFoundError
from mnesis.store.base import ImportSource, PurgeReport
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import fetch, fetch_one, now_ms
from mnesis.store.shared import purge as shared
from mnesis.store.shared.chain import CHAIN_DELETE
from mnesis.store.shared.purge import BasePurge
from mnesis.store.shared.sql import pg

__all__ = ["PostgresPurge"]

_SOURCE_UPSERT = (
    " ON CONFLICT (source_key) DO UPDATE SET format = EXCLUDED.format, "
    "path = EXCLUDED.path, session_id = EXCLUDED.session_id, "
    "byte_offset = EXCLUDED.byte_offset, lines = EXCLUDED.lines, "
    "fingerprint = EXCLUDED.fingerprint, messages = EXCLUDED.messages, "
    "state = EXCLUDED.state, updated_at = EXCLUDED.updated_at"
)


async def _purge_one(conn: Conn, session_id: str, rows: dict[str, int]) -> None:
    await conn.execute("SELECT set_config('mnesis.purge_session', %s, true)", (session_id,))
    for table, sql in shared.DELETES:
        cur = await conn.execute(pg(sql), (session_id,))
        rows[table] = rows.get(table, 0) + max(cur.rowcount, 0)
    await conn.execute(pg(shared.UNLINK_MAP_ITEMS), (session_id,))
    cur = await conn.execute(
        "DELETE FROM file_references f WHERE f.session_id = %s AND NOT EXISTS ("
        "SELECT 1 FROM summaries s WHERE s.session_id <> %s "
        "AND s.file_ids @> jsonb_build_array(f.file_id))",
        (session_id, session_id),
    )
    rows["file_references"] = rows.get("file_references", 0) + max(cur.rowcount, 0)
    await conn.execute(pg(shared.UNLINK_FILES), (session_id,))
    cur = await conn.execute(pg(shared.DELETE_SESSION), (session_id,))
    rows["sessions"] = rows.get("sessions", 0) + max(cur.rowcount, 0)


class PostgresPurge(BasePurge[PostgresDatabase]):
    """Purging a session and recording import progress (``PostgresStore.purge``)."""

    async def purge_session(self, session_id: str) -> PurgeReport:
        async def _purge(conn: Conn) -> PurgeReport:
            if not await fetch_one(conn, pg(shared.SESSION_EXISTS), (session_id,)):
                raise SessionNotFoundError(session_id)
            found = await fetch(conn, pg(shared.DESCENDANTS), (session_id,))
            ids = [r[0] for r in found]
            rows: dict[str, int] = {}
            for sid in ids:
                await _purge_one(conn, sid, rows)
                if self.db.chained:  # the session's hash chain goes with its rows
                    await conn.execute(pg(CHAIN_DELETE), (sid,))
            await conn.execute("SELECT set_config('mnesis.purge_session', '', true)")
            return PurgeReport(session_ids=tuple(ids), rows=rows)

        return await self.db.write(_purge)

    async def get_import_source(self, source_key: str) -> ImportSource | None:
        async def _get(conn: Conn) -> ImportSource | None:
            row = await fetch_one(conn, pg(shared.SOURCE_SELECT), (source_key,))
            if row is None:
                return None
            return shared.import_source(row)

        return await self.db.read(_get)

    async def put_import_source(self, source: ImportSource) -> None:
        source.updated_at = now_ms()

        async def _put(conn: Conn) -> None:
            await conn.execute(pg(shared.SOURCE_INSERT) + _SOURCE_UPSERT, shared.source_row(source))

        await self.db.write(_put)
