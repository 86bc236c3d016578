"""PostgreSQL: :meth:`~mnesis.store.base.StoreBackend.purge_session` and import progress.

A purge runs in one transaction; before deleting each session's rows it sets the
transaction-local ``mnesis.purge_session`` to that session, the one value the
append-only delete guard (migration ``m003_purge_imports``) admits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mnesis.errors import SessionNotFoundError
from mnesis.store.base import ImportSource, PurgeReport
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.rows import fetch, fetch_one, now_ms

__all__ = ["PurgeMixin"]

_SUMMARY_IDS = "SELECT id FROM summaries WHERE session_id = %s"
_DELETES: tuple[tuple[str, str], ...] = (
    ("context_items", "DELETE FROM context_items WHERE session_id = %s"),
    ("compaction_locks", "DELETE FROM compaction_locks WHERE session_id = %s"),
    ("import_sources", "DELETE FROM import_sources WHERE session_id = %s"),
    ("summary_parents", f"DELETE FROM summary_parents WHERE summary_id IN ({_SUMMARY_IDS})"),
    ("summary_messages", f"DELETE FROM summary_messages WHERE summary_id IN ({_SUMMARY_IDS})"),
    ("summaries", "DELETE FROM summaries WHERE session_id = %s"),
    ("message_parts", "DELETE FROM message_parts WHERE session_id = %s"),
    ("messages", "DELETE FROM messages WHERE session_id = %s"),
)
_COLS = (
    "source_key, format, path, session_id, byte_offset, lines, fingerprint, messages, "
    "state, updated_at"
)


async def _purge_one(conn: Conn, session_id: str, rows: dict[str, int]) -> None:
    await conn.execute("SELECT set_config('mnesis.purge_session', %s, true)", (session_id,))
    for table, sql in _DELETES:
        cur = await conn.execute(sql, (session_id,))
        rows[table] = rows.get(table, 0) + max(cur.rowcount, 0)
    await conn.execute(
        "UPDATE map_items SET session_id = NULL WHERE session_id = %s", (session_id,)
    )
    cur = await conn.execute(
        "DELETE FROM file_references f WHERE f.session_id = %s AND NOT EXISTS ("
        "SELECT 1 FROM summaries s WHERE s.session_id <> %s "
        "AND s.file_ids @> jsonb_build_array(f.file_id))",
        (session_id, session_id),
    )
    rows["file_references"] = rows.get("file_references", 0) + max(cur.rowcount, 0)
    await conn.execute(
        "UPDATE file_references SET session_id = NULL WHERE session_id = %s", (session_id,)
    )
    cur = await conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
    rows["sessions"] = rows.get("sessions", 0) + max(cur.rowcount, 0)


def _source(row: Sequence[Any]) -> ImportSource:
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


class PurgeMixin:
    """Purging a session and recording import progress, for :class:`PostgresStore`."""

    db: PostgresDatabase

    async def purge_session(self, session_id: str) -> PurgeReport:
        async def _purge(conn: Conn) -> PurgeReport:
            if not await fetch_one(conn, "SELECT 1 FROM sessions WHERE id = %s", (session_id,)):
                raise SessionNotFoundError(session_id)
            found = await fetch(
                conn,
                "WITH RECURSIVE tree(id, depth) AS (SELECT %s::text, 0 UNION ALL "
                "SELECT s.id, t.depth + 1 FROM sessions s JOIN tree t ON s.parent_id = t.id) "
                "SELECT id FROM tree ORDER BY depth DESC, id",
                (session_id,),
            )
            ids = [r[0] for r in found]
            rows: dict[str, int] = {}
            for sid in ids:
                await _purge_one(conn, sid, rows)
            await conn.execute("SELECT set_config('mnesis.purge_session', '', true)")
            return PurgeReport(session_ids=tuple(ids), rows=rows)

        return await self.db.write(_purge)

    async def get_import_source(self, source_key: str) -> ImportSource | None:
        async def _get(conn: Conn) -> ImportSource | None:
            row = await fetch_one(
                conn, f"SELECT {_COLS} FROM import_sources WHERE source_key = %s", (source_key,)
            )
            if row is None:
                return None
            return _source(row)

        return await self.db.read(_get)

    async def put_import_source(self, source: ImportSource) -> None:
        source.updated_at = now_ms()

        async def _put(conn: Conn) -> None:
            await conn.execute(
                f"INSERT INTO import_sources ({_COLS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (source_key) DO UPDATE SET format = EXCLUDED.format, "
                "path = EXCLUDED.path, session_id = EXCLUDED.session_id, "
                "byte_offset = EXCLUDED.byte_offset, lines = EXCLUDED.lines, "
                "fingerprint = EXCLUDED.fingerprint, messages = EXCLUDED.messages, "
                "state = EXCLUDED.state, updated_at = EXCLUDED.updated_at",
                (
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
                ),
            )

        await self.db.write(_put)
