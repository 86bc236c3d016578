"""The SQLite backend of :class:`~mnesis.store.base.ImmutableStore` (the embedded default)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from mnesis.errors import (
    CompactionLockedError,
    InvalidArgumentError,
    MessageNotFoundError,
    MnesisStoreError,
    PartNotFoundError,
    SessionNotFoundError,
)
from mnesis.models.ids import new_id
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import MessagePart, ToolPart, ToolState
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import (
    AppendedMessage,
    CompactionCommit,
    ContextItem,
    FileReference,
    ImmutableStore,
    IntegritySnapshot,
    NewMessage,
    SearchFilter,
    SearchHit,
    SessionRecord,
    SummaryRecord,
)
from mnesis.store.codec import decode_part, dumps, encode_part, make_message, searchable_text
from mnesis.store.search_text import index_text

if TYPE_CHECKING:
    from mnesis.store.pool import StorePool
    from mnesis.store.sqlite_db import SQLiteDatabase

__all__ = ["SQLiteStore"]

_MSG_COLS = (
    "id, session_id, role, created_at, agent, model_id, provider_id, is_summary, parent_id, "
    "tokens_input, tokens_output, tokens_cache_read, tokens_cache_write, tokens_total, cost, "
    "finish_reason, token_estimate"
)
_MSG_KEYS = [c.strip() for c in _MSG_COLS.split(",")]
_PART_COLS = "id, message_id, content, tool_state, compacted_at, started_at, completed_at"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _session(row: Sequence[Any]) -> SessionRecord:
    return SessionRecord(
        id=row[0],
        model=row[1],
        agent=row[2],
        parent_id=row[3],
        system_prompt=row[4],
        title=row[5],
        status=row[6],
        created_at=row[7],
        updated_at=row[8],
        config=json.loads(row[9]) if row[9] else None,
    )


def _summary(row: Sequence[Any]) -> SummaryRecord:
    return SummaryRecord(
        id=row[0],
        session_id=row[1],
        kind=row[2],
        depth=row[3],
        level=row[4],
        content=row[5],
        token_count=row[6],
        file_ids=json.loads(row[7]),
        message_id=row[8],
        span_start_message_id=row[9],
        span_end_message_id=row[10],
        source_message_count=row[11],
        created_at=row[12],
    )


_SESSION_COLS = (
    "id, model, agent, parent_id, system_prompt, title, status, created_at, updated_at, config"
)
_SUMMARY_COLS = (
    "id, session_id, kind, depth, level, content, token_count, file_ids, message_id, "
    "span_start_message_id, span_end_message_id, source_message_count, created_at"
)


def _load_messages(
    conn: sqlite3.Connection, msg_rows: list[Any], part_sql: str, part_args: Sequence[Any]
) -> list[MessageWithParts]:
    by_id: dict[str, MessageWithParts] = {}
    ordered: list[MessageWithParts] = []
    for row in msg_rows:
        mwp = MessageWithParts.model_construct(
            message=make_message(**dict(zip(_MSG_KEYS, row, strict=True))), parts=[]
        )
        by_id[row[0]] = mwp
        ordered.append(mwp)
    if ordered:
        for prow in conn.execute(part_sql, part_args):
            target = by_id.get(prow[1])
            if target is not None:
                target.parts.append(decode_part(prow[0], prow[2], *prow[3:7]))
    return ordered


class SQLiteStore(ImmutableStore):
    """Stores sessions in one SQLite file (WAL, foreign keys, append-only triggers)."""

    def __init__(self, db: SQLiteDatabase, *, pool: StorePool | None, pool_key: str) -> None:
        self.db = db
        self.pool = pool
        self.pool_key = pool_key
        self._released = False

    @classmethod
    async def open(cls, path: str, pool: StorePool | None = None) -> SQLiteStore:
        """Open (creating and migrating if needed) the database at ``path``."""
        from mnesis.store.pool import StorePool

        return await (pool or StorePool.default()).acquire_sqlite(path)

    @property
    def path(self) -> str:
        """The database file path."""
        return self.db.path

    async def close(self) -> None:
        if self._released:
            return
        self._released = True
        if self.pool is not None:
            await self.pool.release(self)
        else:
            await self.db.close()

    async def _first_column(self, sql: str, args: Sequence[Any]) -> list[str]:
        """The first column of every row of a read query."""
        return await self.db.read(lambda conn: [r[0] for r in conn.execute(sql, args)])

    # sessions -------------------------------------------------------------
    async def create_session(self, record: SessionRecord) -> None:
        now = _now_ms()
        record.created_at = record.created_at or now
        record.updated_at = record.updated_at or now

        def _insert(conn: sqlite3.Connection) -> None:
            if (
                record.parent_id is not None
                and not conn.execute(
                    "SELECT 1 FROM sessions WHERE id = ?", (record.parent_id,)
                ).fetchone()
            ):
                raise SessionNotFoundError(record.parent_id)
            conn.execute(
                f"INSERT INTO sessions ({_SESSION_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
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
                ),
            )

        await self.db.write(_insert)

    async def get_session(self, session_id: str) -> SessionRecord:
        def _get(conn: sqlite3.Connection) -> SessionRecord:
            row = conn.execute(
                f"SELECT {_SESSION_COLS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise SessionNotFoundError(session_id)
            return _session(row)

        return await self.db.read(_get)

    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionRecord]:
        def _list(conn: sqlite3.Connection) -> list[SessionRecord]:
            rows = conn.execute(
                f"SELECT {_SESSION_COLS} FROM sessions ORDER BY created_at DESC, id DESC "
                "LIMIT ? OFFSET ?",
                (limit, offset),
            )
            return [_session(r) for r in rows]

        return await self.db.read(_list)

    async def set_session_status(
        self, session_id: str, status: Literal["active", "closed"]
    ) -> None:
        def _set(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?",
                (status, _now_ms(), session_id),
            )
            if cur.rowcount == 0:
                raise SessionNotFoundError(session_id)

        await self.db.write(_set)

    # messages -------------------------------------------------------------
    async def append_messages(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        prepared: list[tuple[NewMessage, list[tuple[str, int, dict[str, Any]]]]] = []
        for item in batch:
            tokens = list(item.part_tokens) if item.part_tokens is not None else []
            rows = []
            for index, part in enumerate(item.parts):
                if part.id is None:
                    part.id = new_id("part")
                est = tokens[index] if index < len(tokens) else 0
                rows.append((part.id, est, encode_part(part)))
            prepared.append((item, rows))
        now = _now_ms()

        def _append(conn: sqlite3.Connection) -> list[AppendedMessage]:
            out: list[AppendedMessage] = []
            for item, rows in prepared:
                m = item.message
                seq = conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?",
                    (m.session_id,),
                ).fetchone()[0]
                t = m.tokens or TokenUsage()
                try:
                    conn.execute(
                        f"INSERT INTO messages ({_MSG_COLS}, seq) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            m.id,
                            m.session_id,
                            m.role,
                            m.created_at,
                            m.agent,
                            m.model_id,
                            m.provider_id,
                            int(m.is_summary),
                            m.parent_id,
                            t.input,
                            t.output,
                            t.cache_read,
                            t.cache_write,
                            t.effective_total(),
                            m.cost,
                            m.finish_reason,
                            m.token_estimate,
                            seq,
                        ),
                    )
                except sqlite3.IntegrityError as exc:
                    if "FOREIGN KEY" in str(exc):
                        raise SessionNotFoundError(m.session_id) from exc
                    raise
                _insert_parts(conn, m.id, m.session_id, 0, rows, now)
                position = None
                if item.in_context:
                    position = conn.execute(
                        "SELECT COALESCE(MAX(position), 0) + 1 FROM context_items "
                        "WHERE session_id = ?",
                        (m.session_id,),
                    ).fetchone()[0]
                    conn.execute(
                        "INSERT INTO context_items (session_id, position, item_type, message_id, "
                        "tokens, created_at) VALUES (?, ?, 'message', ?, ?, ?)",
                        (m.session_id, position, m.id, m.token_estimate, now),
                    )
                out.append(AppendedMessage(m.id, seq, position, tuple(r[0] for r in rows)))
            return out

        return await self.db.write(_append)

    async def append_parts(
        self,
        message_id: str,
        parts: Sequence[MessagePart],
        *,
        part_tokens: Sequence[int] | None = None,
        tokens: TokenUsage | None = None,
        finish_reason: str | None = None,
        token_estimate: int | None = None,
    ) -> list[str]:
        estimates = list(part_tokens or [])
        rows = []
        for index, part in enumerate(parts):
            if part.id is None:
                part.id = new_id("part")
            est = estimates[index] if index < len(estimates) else 0
            rows.append((part.id, est, encode_part(part)))
        now = _now_ms()
        update = _message_update(tokens, None, finish_reason, token_estimate)

        def _append(conn: sqlite3.Connection) -> list[str]:
            found = conn.execute(
                "SELECT session_id FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
            if found is None:
                raise MessageNotFoundError(message_id)
            first = conn.execute(
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM message_parts WHERE message_id = ?",
                (message_id,),
            ).fetchone()[0]
            _insert_parts(conn, message_id, found[0], first, rows, now)
            if update is not None:
                update(conn, message_id)
            return [r[0] for r in rows]

        return await self.db.write(_append)

    async def update_message_tokens(
        self,
        message_id: str,
        *,
        tokens: TokenUsage | None = None,
        cost: float | None = None,
        finish_reason: str | None = None,
        token_estimate: int | None = None,
    ) -> None:
        update = _message_update(tokens, cost, finish_reason, token_estimate)
        if update is None:
            return
        await self.db.write(lambda conn: update(conn, message_id))

    async def update_part_status(
        self,
        part_id: str,
        *,
        state: ToolState | None = None,
        compacted_at: int | None = None,
        output: str | None = None,
        error_message: str | None = None,
        started_at: int | None = None,
        completed_at: int | None = None,
        token_estimate: int | None = None,
        message_token_estimate: int | None = None,
    ) -> None:
        def _update(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT content, part_type, tool_state, compacted_at, started_at, completed_at "
                "FROM message_parts WHERE id = ?",
                (part_id,),
            ).fetchone()
            if row is None:
                raise PartNotFoundError(part_id)
            content, part_type, old_state, old_compacted, old_started, old_completed = row
            if part_type != "tool":
                raise InvalidArgumentError(
                    f"part {part_id} is a {part_type!r} part; only tool parts have a status"
                )
            if (output is not None or error_message is not None) and old_state in (
                "completed",
                "error",
            ):
                raise InvalidArgumentError(
                    f"tool call of part {part_id} is already {old_state}; its result is history"
                )
            new_state = state or old_state
            new_content = content
            text_content: str | None = None
            if output is not None or error_message is not None or state is not None:
                part = decode_part(
                    part_id, content, old_state, old_compacted, old_started, old_completed
                )
                assert isinstance(part, ToolPart)
                if output is not None:
                    part.output = output
                if error_message is not None:
                    part.error_message = error_message
                part.status.state = new_state
                data = part.model_dump(exclude={"id"})
                new_content = dumps(data)
                text_content = searchable_text(part)
            conn.execute(
                "UPDATE message_parts SET tool_state = ?, compacted_at = ?, started_at = ?, "
                "completed_at = ?, content = ?, text_content = COALESCE(?, text_content), "
                "token_estimate = COALESCE(?, token_estimate) WHERE id = ?",
                (
                    new_state,
                    compacted_at if compacted_at is not None else old_compacted,
                    started_at if started_at is not None else old_started,
                    completed_at if completed_at is not None else old_completed,
                    new_content,
                    text_content if new_content != content else None,
                    token_estimate,
                    part_id,
                ),
            )
            if message_token_estimate is not None:
                owner = conn.execute(
                    "SELECT message_id FROM message_parts WHERE id = ?", (part_id,)
                ).fetchone()[0]
                conn.execute(
                    "UPDATE messages SET token_estimate = ? WHERE id = ?",
                    (message_token_estimate, owner),
                )
                conn.execute(
                    "UPDATE context_items SET tokens = ? WHERE message_id = ?",
                    (message_token_estimate, owner),
                )

        await self.db.write(_update)

    async def tombstone_parts(
        self,
        parts: Sequence[tuple[str, int, int]],
        message_estimates: Sequence[tuple[str, int]],
    ) -> None:
        def _prune(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "UPDATE message_parts SET compacted_at = ?, token_estimate = ? "
                "WHERE id = ? AND part_type = 'tool' AND compacted_at IS NULL",
                [(at, tokens, part_id) for part_id, at, tokens in parts],
            )
            conn.executemany(
                "UPDATE messages SET token_estimate = ? WHERE id = ?",
                [(tokens, message_id) for message_id, tokens in message_estimates],
            )
            conn.executemany(
                "UPDATE context_items SET tokens = ? WHERE message_id = ?",
                [(tokens, message_id) for message_id, tokens in message_estimates],
            )

        await self.db.write(_prune)

    async def get_message(self, message_id: str) -> MessageWithParts:
        found = await self.get_messages_by_ids([message_id])
        if not found:
            raise MessageNotFoundError(message_id)
        return found[0]

    async def get_messages(
        self,
        session_id: str,
        *,
        include_summaries: bool = True,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[MessageWithParts]:
        summary_clause = "" if include_summaries else " AND is_summary = 0"
        lim = -1 if limit is None else int(limit)

        def _get(conn: sqlite3.Connection) -> list[MessageWithParts]:
            rows = conn.execute(
                f"SELECT {_MSG_COLS} FROM messages WHERE session_id = ? AND seq > ?"
                f"{summary_clause} ORDER BY seq LIMIT ?",
                (session_id, after_seq, lim),
            ).fetchall()
            if not rows:
                return []
            ids = dumps([r[0] for r in rows])
            return _load_messages(
                conn,
                rows,
                f"SELECT {_PART_COLS} FROM message_parts WHERE message_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY message_id, ordinal",
                (ids,),
            )

        return await self.db.read(_get)

    async def get_messages_by_ids(self, message_ids: Sequence[str]) -> list[MessageWithParts]:
        if not message_ids:
            return []
        ids = dumps(list(message_ids))

        def _get(conn: sqlite3.Connection) -> list[MessageWithParts]:
            rows = conn.execute(
                f"SELECT {_MSG_COLS} FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                (ids,),
            ).fetchall()
            found = _load_messages(
                conn,
                rows,
                f"SELECT {_PART_COLS} FROM message_parts WHERE message_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY message_id, ordinal",
                (ids,),
            )
            by_id = {m.message.id: m for m in found}
            return [by_id[i] for i in message_ids if i in by_id]

        return await self.db.read(_get)

    async def count_messages(self, session_id: str) -> int:
        def _count(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            return int(row[0])

        return await self.db.read(_count)

    async def session_token_usage(self, session_id: str) -> TokenUsage:
        def _sum(conn: sqlite3.Connection) -> TokenUsage:
            row = conn.execute(
                "SELECT COALESCE(SUM(tokens_input), 0), COALESCE(SUM(tokens_output), 0), "
                "COALESCE(SUM(tokens_cache_read), 0), COALESCE(SUM(tokens_cache_write), 0), "
                "COALESCE(SUM(tokens_total), 0) FROM messages WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            return TokenUsage(
                input=row[0], output=row[1], cache_read=row[2], cache_write=row[3], total=row[4]
            )

        return await self.db.read(_sum)

    async def find_tool_part(self, session_id: str, tool_call_id: str) -> tuple[str, str]:
        def _find(conn: sqlite3.Connection) -> tuple[str, str]:
            row = conn.execute(
                "SELECT id, message_id FROM message_parts WHERE session_id = ? "
                "AND tool_call_id = ? ORDER BY rowid DESC LIMIT 1",
                (session_id, tool_call_id),
            ).fetchone()
            if row is None:
                raise PartNotFoundError(tool_call_id)
            return row[0], row[1]

        return await self.db.read(_find)

    # context --------------------------------------------------------------
    async def get_context_items(
        self,
        session_id: str,
        *,
        item_type: Literal["message", "summary"] | None = None,
        newest_first: bool = False,
        before_position: int | None = None,
        limit: int | None = None,
    ) -> list[ContextItem]:
        where = ["ci.session_id = ?"]
        args: list[Any] = [session_id]
        if item_type is not None:
            if item_type not in ("message", "summary"):
                raise InvalidArgumentError(f"unknown context item type {item_type!r}")
            # A literal, not a parameter: SQLite only uses the partial summary index
            # when it can see the WHERE clause matches it.
            where.append(f"ci.item_type = '{item_type}'")
        if before_position is not None:
            where.append("ci.position < ?")
            args.append(before_position)
        args.append(-1 if limit is None else int(limit))
        # Without ANALYZE statistics SQLite prefers the primary key (it also orders by
        # position) and would scan every item of the session to find the few summaries.
        hint = "INDEXED BY context_items_summary_idx " if item_type == "summary" else ""
        sql = (
            "SELECT ci.position, ci.item_type, COALESCE(ci.message_id, ci.summary_id), "
            f"ci.tokens, m.role FROM context_items ci {hint}"
            "LEFT JOIN messages m ON m.id = ci.message_id "
            f"WHERE {' AND '.join(where)} ORDER BY ci.position "
            f"{'DESC' if newest_first else 'ASC'} LIMIT ?"
        )

        def _get(conn: sqlite3.Connection) -> list[ContextItem]:
            return [ContextItem(r[0], r[1], r[2], r[3], r[4]) for r in conn.execute(sql, args)]

        return await self.db.read(_get)

    async def context_token_total(self, session_id: str) -> int:
        def _sum(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT COALESCE(SUM(tokens), 0) FROM context_items WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            return int(row[0])

        return await self.db.read(_sum)

    # summaries ------------------------------------------------------------
    async def commit_compaction(self, commit: CompactionCommit) -> AppendedMessage:
        s = commit.summary
        marker = commit.marker
        marker_rows = []
        tokens = list(marker.part_tokens or [])
        for index, part in enumerate(marker.parts):
            if part.id is None:
                part.id = new_id("part")
            marker_rows.append(
                (part.id, tokens[index] if index < len(tokens) else 0, encode_part(part))
            )
        now = _now_ms()
        if not commit.replaced:
            raise InvalidArgumentError("a compaction must replace at least one context item")

        def _commit(conn: sqlite3.Connection) -> AppendedMessage:
            for position, item_id in commit.replaced:
                row = conn.execute(
                    "SELECT COALESCE(message_id, summary_id) FROM context_items "
                    "WHERE session_id = ? AND position = ?",
                    (s.session_id, position),
                ).fetchone()
                if row is None or row[0] != item_id:
                    raise CompactionLockedError(
                        f"context of session {s.session_id} changed during compaction "
                        f"(position {position}); another compactor won, retry"
                    )
            m = marker.message
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?",
                (m.session_id,),
            ).fetchone()[0]
            conn.execute(
                f"INSERT INTO messages ({_MSG_COLS}, seq) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, NULL, ?, ?)",
                (
                    m.id,
                    m.session_id,
                    m.role,
                    m.created_at,
                    m.agent,
                    m.model_id,
                    m.provider_id,
                    1,
                    m.parent_id,
                    m.token_estimate,
                    seq,
                ),
            )
            _insert_parts(conn, m.id, m.session_id, 0, marker_rows, now)
            conn.execute(
                f"INSERT INTO summaries ({_SUMMARY_COLS}, search_text) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    s.id,
                    s.session_id,
                    s.kind,
                    s.depth,
                    s.level,
                    s.content,
                    s.token_count,
                    dumps(s.file_ids),
                    m.id,
                    s.span_start_message_id,
                    s.span_end_message_id,
                    s.source_message_count,
                    s.created_at or now,
                    index_text(s.content),
                ),
            )
            conn.executemany(
                "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
                [(s.id, mid, i) for i, mid in enumerate(commit.source_message_ids)],
            )
            conn.executemany(
                "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) "
                "VALUES (?, ?, ?)",
                [(s.id, pid, i) for i, pid in enumerate(commit.parent_summary_ids)],
            )
            positions = [p for p, _ in commit.replaced]
            conn.executemany(
                "DELETE FROM context_items WHERE session_id = ? AND position = ?",
                [(s.session_id, p) for p in positions],
            )
            conn.execute(
                "INSERT INTO context_items (session_id, position, item_type, summary_id, tokens, "
                "created_at) VALUES (?, ?, 'summary', ?, ?, ?)",
                (s.session_id, min(positions), s.id, commit.context_tokens, now),
            )
            return AppendedMessage(m.id, seq, None, tuple(r[0] for r in marker_rows))

        return await self.db.write(_commit)

    async def get_summaries(self, summary_ids: Sequence[str]) -> list[SummaryRecord]:
        if not summary_ids:
            return []
        ids = dumps(list(summary_ids))

        def _get(conn: sqlite3.Connection) -> list[SummaryRecord]:
            rows = conn.execute(
                f"SELECT {_SUMMARY_COLS} FROM summaries WHERE id IN "
                "(SELECT value FROM json_each(?))",
                (ids,),
            )
            by_id = {r[0]: _summary(r) for r in rows}
            return [by_id[i] for i in summary_ids if i in by_id]

        return await self.db.read(_get)

    async def get_summary_source_ids(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT message_id FROM summary_messages WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )

    async def get_summary_parent_ids(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )

    async def acquire_compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float, *, steal_from: str | None = None
    ) -> bool:
        def _acquire(conn: sqlite3.Connection) -> bool:
            now = _now_ms()
            cur = conn.execute(
                "INSERT INTO compaction_locks (session_id, owner, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
                "expires_at = excluded.expires_at "
                "WHERE compaction_locks.expires_at < ? OR compaction_locks.owner = excluded.owner "
                "OR compaction_locks.owner = ?",
                (session_id, owner, now + int(ttl_seconds * 1000), now, steal_from),
            )
            return cur.rowcount == 1

        return await self.db.write(_acquire)

    async def compaction_lock_owner(self, session_id: str) -> str | None:
        def _get(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT owner FROM compaction_locks WHERE session_id = ?", (session_id,)
            ).fetchone()
            return None if row is None else str(row[0])

        return await self.db.read(_get)

    async def release_compaction_lock(self, session_id: str, owner: str) -> None:
        def _release(conn: sqlite3.Connection) -> None:
            conn.execute(
                "DELETE FROM compaction_locks WHERE session_id = ? AND owner = ?",
                (session_id, owner),
            )

        await self.db.write(_release)

    async def get_summaries_merging(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT summary_id FROM summary_parents WHERE parent_summary_id = ? "
            "ORDER BY summary_id",
            (summary_id,),
        )

    async def get_leaf_summaries_of_message(self, message_id: str) -> list[str]:
        return await self._first_column(
            "SELECT summary_id FROM summary_messages WHERE message_id = ? ORDER BY summary_id",
            (message_id,),
        )

    async def get_source_message_ids_deep(self, summary_id: str) -> list[str]:
        def _get(conn: sqlite3.Connection) -> list[str]:
            return [
                r[0]
                for r in conn.execute(
                    f"{_DOWN_CTE} SELECT m.id FROM messages m WHERE m.id IN "
                    "(SELECT sm.message_id FROM summary_messages sm JOIN down "
                    "ON sm.summary_id = down.id) ORDER BY m.seq",
                    (summary_id,),
                )
            ]

        return await self.db.read(_get)

    async def covering_context_summaries(
        self, session_id: str, message_ids: Sequence[str]
    ) -> dict[str, str | None]:
        def _get(conn: sqlite3.Connection) -> dict[str, str | None]:
            out: dict[str, str | None] = {}
            for mid in message_ids:
                row = conn.execute(
                    "WITH RECURSIVE up(id) AS ("
                    "SELECT summary_id FROM summary_messages WHERE message_id = ? "
                    "UNION SELECT sp.summary_id FROM summary_parents sp "
                    "JOIN up ON sp.parent_summary_id = up.id) "
                    "SELECT ci.summary_id FROM context_items ci JOIN up "
                    "ON ci.summary_id = up.id WHERE ci.session_id = ? LIMIT 1",
                    (mid, session_id),
                ).fetchone()
                out[mid] = row[0] if row else None
            return out

        return await self.db.read(_get)

    async def messages_in_context(self, session_id: str, message_ids: Sequence[str]) -> set[str]:
        if not message_ids:
            return set()
        ids = dumps(list(message_ids))

        def _get(conn: sqlite3.Connection) -> set[str]:
            return {
                r[0]
                for r in conn.execute(
                    "SELECT message_id FROM context_items WHERE session_id = ? AND message_id IN "
                    "(SELECT value FROM json_each(?))",
                    (session_id, ids),
                )
            }

        return await self.db.read(_get)

    # search ---------------------------------------------------------------
    async def search_text(
        self,
        *,
        fts_query: str,
        scope: Literal["messages", "summaries"],
        where: SearchFilter,
        limit: int,
        offset: int = 0,
    ) -> list[SearchHit]:
        column = "{text_content tool_content}" if scope == "messages" else "search_text"
        match = f"{column} : ({fts_query})"
        clauses, args = _filter_sql(where, scope)
        if where.session_ids is not None:
            if not where.session_ids:
                return []
            if await self._sessions_are_a_small_share(where.session_ids):
                # Intersect posting lists: cheap when the sessions are a small part of
                # the index.
                tokens = " OR ".join(
                    '"' + sid[5:].replace('"', '""') + '"' for sid in where.session_ids
                )
                match = f"session_id : ({tokens}) AND {match}"
            else:
                # Intersecting with a posting list that covers most of the index costs
                # more than filtering the joined rows.
                alias = "p" if scope == "messages" else "s"
                clauses += f" AND {alias}.session_id IN (SELECT value FROM json_each(?))"
                args = [*args, dumps(list(where.session_ids))]
        wanted = limit + offset
        # Rank inside the index first and join only the best candidates; a filter that
        # rejects too many of them falls back to joining every match (below).
        candidates = wanted * 4 + 64
        if scope == "messages":
            sql = (
                f"{_DOWN_CTE if where.under_summary else ''} "
                "SELECT p.rowid, p.id, p.message_id, p.session_id, p.text_content, m.role, "
                "m.created_at, f.score FROM (SELECT rowid, "
                f"bm25(message_parts_fts, 1.0, {_TOOL_WEIGHT}, 0.0) AS score "
                "FROM message_parts_fts WHERE message_parts_fts MATCH ? "
                "ORDER BY score LIMIT ?) f "
                "JOIN message_parts p ON p.rowid = f.rowid "
                "JOIN messages m ON m.id = p.message_id "
                f"WHERE m.is_summary = 0 {clauses} "
                "ORDER BY f.score LIMIT ? OFFSET ?"
            )
        else:
            sql = (
                "SELECT s.rowid, NULL, s.id, s.session_id, s.content, NULL, s.created_at, f.rank "
                "FROM summaries_fts f JOIN summaries s ON s.rowid = f.rowid "
                f"WHERE summaries_fts MATCH ? {clauses} ORDER BY f.rank LIMIT ? OFFSET ?"
            )
        def params(inner_limit: int) -> list[Any]:
            out: list[Any] = []
            if where.under_summary and scope == "messages":
                out.append(where.under_summary)
            out.append(match)
            if scope == "messages":
                out.append(inner_limit)
            return [*out, *args, limit, offset]

        kind: Literal["message", "summary"] = "message" if scope == "messages" else "summary"

        def _search(conn: sqlite3.Connection) -> list[SearchHit]:
            rows = conn.execute(sql, params(candidates)).fetchall()
            if scope == "messages" and len(rows) < limit:
                # Fewer hits than asked: either there are no more, or the filters
                # rejected ranked candidates; rank every match to be sure.
                rows = conn.execute(sql, params(-1)).fetchall()
            return [
                SearchHit(kind, r[2], r[3], r[4] or "", r[6], r[1], r[5], float(r[7]), r[0])
                for r in rows
            ]

        return await self.db.read(_search)

    async def _sessions_are_a_small_share(self, session_ids: Sequence[str]) -> bool:
        """True when the sessions hold under a quarter of all stored messages."""

        def _share(conn: sqlite3.Connection) -> bool:
            total = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM messages").fetchone()[0]
            if total < 20_000:
                return False
            mine = 0
            for sid in session_ids[:50]:
                # One index probe per session (MAX over the (session_id, seq) index).
                row = conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", (sid,)
                ).fetchone()
                mine += int(row[0])
            return len(session_ids) <= 50 and mine * 4 < total

        return await self.db.read(_share)

    async def scan_text(
        self,
        *,
        scope: Literal["messages", "summaries"],
        where: SearchFilter,
        before_key: int | None,
        limit: int,
    ) -> list[SearchHit]:
        clauses, args = _filter_sql(where, scope)
        sessions = ""
        if where.session_ids is not None:
            if not where.session_ids:
                return []
            alias = "p" if scope == "messages" else "s"
            if len(where.session_ids) == 1:
                # Equality lets SQLite walk the (session_id, rowid) index in order.
                sessions = f" AND {alias}.session_id = ?"
                args = [where.session_ids[0], *args]
            else:
                sessions = f" AND {alias}.session_id IN (SELECT value FROM json_each(?))"
                args = [dumps(list(where.session_ids)), *args]
        if scope == "messages":
            key = " AND p.rowid < ?" if before_key is not None else ""
            sql = (
                f"{_DOWN_CTE if where.under_summary else ''} "
                "SELECT p.rowid, p.id, p.message_id, p.session_id, p.text_content, m.role, "
                "m.created_at FROM message_parts p JOIN messages m ON m.id = p.message_id "
                f"WHERE p.text_content IS NOT NULL AND m.is_summary = 0{sessions}{key} {clauses} "
                "ORDER BY p.rowid DESC LIMIT ?"
            )
        else:
            key = " AND s.rowid < ?" if before_key is not None else ""
            sql = (
                "SELECT s.rowid, NULL, s.id, s.session_id, s.content, NULL, s.created_at "
                f"FROM summaries s WHERE 1 = 1{sessions}{key} {clauses} "
                "ORDER BY s.rowid DESC LIMIT ?"
            )
        params: list[Any] = []
        if where.under_summary and scope == "messages":
            params.append(where.under_summary)
        params += args[:1] if sessions else []
        if before_key is not None:
            params.append(before_key)
        params += args[1:] if sessions else args
        params.append(limit)
        kind: Literal["message", "summary"] = "message" if scope == "messages" else "summary"

        def _scan(conn: sqlite3.Connection) -> list[SearchHit]:
            return [
                SearchHit(kind, r[2], r[3], r[4] or "", r[6], r[1], r[5], 0.0, r[0])
                for r in conn.execute(sql, params)
            ]

        return await self.db.read(_scan)

    # integrity --------------------------------------------------------------
    async def list_session_ids(self) -> list[str]:
        return await self._first_column("SELECT id FROM sessions ORDER BY created_at, id", ())

    async def integrity_snapshot(self, session_id: str) -> IntegritySnapshot:
        def _get(conn: sqlite3.Connection) -> IntegritySnapshot:
            # One read transaction: every query sees the same committed state.
            conn.execute("BEGIN")
            try:
                return _read(conn)
            finally:
                conn.execute("COMMIT")

        def _read(conn: sqlite3.Connection) -> IntegritySnapshot:
            context = [
                (r[0], r[1], r[2], r[3])
                for r in conn.execute(
                    "SELECT position, item_type, message_id, summary_id FROM context_items "
                    "WHERE session_id = ? ORDER BY position",
                    (session_id,),
                )
            ]
            missing = [
                r[0]
                for r in conn.execute(
                    "SELECT ci.position FROM context_items ci "
                    "LEFT JOIN messages m ON m.id = ci.message_id "
                    "LEFT JOIN summaries s ON s.id = ci.summary_id "
                    "WHERE ci.session_id = ? AND m.id IS NULL AND s.id IS NULL",
                    (session_id,),
                )
            ]
            messages = [
                (r[0], r[1], r[2], bool(r[3]), r[4])
                for r in conn.execute(
                    "SELECT id, seq, role, is_summary, token_estimate FROM messages "
                    "WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                )
            ]
            summaries = [
                (r[0], r[1], json.loads(r[2]), r[3], r[4])
                for r in conn.execute(
                    "SELECT id, kind, file_ids, span_start_message_id, span_end_message_id "
                    "FROM summaries WHERE session_id = ? ORDER BY rowid",
                    (session_id,),
                )
            ]
            edges = [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT sm.summary_id, sm.message_id FROM summary_messages sm "
                    "JOIN summaries s ON s.id = sm.summary_id WHERE s.session_id = ? "
                    "ORDER BY sm.summary_id, sm.ordinal",
                    (session_id,),
                )
            ]
            parents = [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT sp.summary_id, sp.parent_summary_id FROM summary_parents sp "
                    "JOIN summaries s ON s.id = sp.summary_id WHERE s.session_id = ? "
                    "ORDER BY sp.summary_id, sp.ordinal",
                    (session_id,),
                )
            ]
            wanted = sorted({f for row in summaries for f in row[2]})
            known = {
                r[0]
                for r in conn.execute(
                    "SELECT file_id FROM file_references WHERE file_id IN "
                    "(SELECT value FROM json_each(?))",
                    (dumps(wanted),),
                )
            }
            return IntegritySnapshot(
                session_id, context, messages, summaries, edges, parents, known, missing
            )

        return await self.db.read(_get)

    async def replace_context_items(
        self, session_id: str, items: Sequence[tuple[str, str, int]]
    ) -> None:
        now = _now_ms()

        def _replace(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM context_items WHERE session_id = ?", (session_id,))
            conn.executemany(
                "INSERT INTO context_items (session_id, position, item_type, message_id, "
                "summary_id, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
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
                ],
            )

        await self.db.write(_replace)

    async def add_summary_sources(self, summary_id: str, message_ids: Sequence[str]) -> None:
        def _add(conn: sqlite3.Connection) -> None:
            first = conn.execute(
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM summary_messages WHERE summary_id = ?",
                (summary_id,),
            ).fetchone()[0]
            conn.executemany(
                "INSERT OR IGNORE INTO summary_messages (summary_id, message_id, ordinal) "
                "VALUES (?, ?, ?)",
                [(summary_id, mid, first + i) for i, mid in enumerate(message_ids)],
            )

        await self.db.write(_add)

    async def backup_to(self, path: str) -> None:
        def _backup(conn: sqlite3.Connection) -> None:
            try:
                target = sqlite3.connect(path)
                try:
                    conn.backup(target)
                finally:
                    target.close()
            except sqlite3.Error as exc:
                # The target failed, not this database: say so.
                raise MnesisStoreError(f"cannot write the backup {path}: {exc}") from exc

        await self.db.read(_backup)

    # files ----------------------------------------------------------------
    async def store_file_reference(self, ref: FileReference) -> FileReference:
        ref.created_at = ref.created_at or _now_ms()

        def _store(conn: sqlite3.Connection) -> FileReference:
            conn.execute(
                "INSERT OR IGNORE INTO file_references (content_id, file_id, path, file_type, "
                "token_count, byte_size, exploration_summary, session_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    ref.content_id,
                    ref.file_id,
                    ref.path,
                    ref.file_type,
                    ref.token_count,
                    ref.byte_size,
                    ref.exploration_summary,
                    ref.session_id,
                    ref.created_at,
                ),
            )
            found = _get_file(conn, ref.content_id)
            assert found is not None
            return found

        return await self.db.write(_store)

    async def get_file_reference(self, content_or_file_id: str) -> FileReference | None:
        return await self.db.read(lambda conn: _get_file(conn, content_or_file_id))


_TOOL_WEIGHT = 0.35
"""BM25 weight of tool input/output relative to conversation text."""

_DOWN_CTE = (
    "WITH RECURSIVE down(id) AS (SELECT ? UNION SELECT sp.parent_summary_id "
    "FROM summary_parents sp JOIN down ON sp.summary_id = down.id)"
)


def _message_update(
    tokens: TokenUsage | None,
    cost: float | None,
    finish_reason: str | None,
    token_estimate: int | None,
) -> Callable[[sqlite3.Connection, str], None] | None:
    """The permitted mutation of a message row (and its context item's tokens), to run
    inside a write transaction; None when there is nothing to change."""
    sets: list[str] = []
    args: list[Any] = []
    if tokens is not None:
        sets.append(
            "tokens_input = ?, tokens_output = ?, tokens_cache_read = ?, "
            "tokens_cache_write = ?, tokens_total = ?"
        )
        args += [
            tokens.input,
            tokens.output,
            tokens.cache_read,
            tokens.cache_write,
            tokens.effective_total(),
        ]
    if cost is not None:
        sets.append("cost = ?")
        args.append(cost)
    if finish_reason is not None:
        sets.append("finish_reason = ?")
        args.append(str(finish_reason))
    if token_estimate is not None:
        sets.append("token_estimate = ?")
        args.append(token_estimate)
    if not sets:
        return None

    def _update(conn: sqlite3.Connection, message_id: str) -> None:
        cur = conn.execute(
            f"UPDATE messages SET {', '.join(sets)} WHERE id = ?", (*args, message_id)
        )
        if cur.rowcount == 0:
            raise MessageNotFoundError(message_id)
        if token_estimate is not None:
            conn.execute(
                "UPDATE context_items SET tokens = ? WHERE message_id = ?",
                (token_estimate, message_id),
            )

    return _update


_PART_INSERT = (
    "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
    "text_content, tool_name, tool_call_id, tool_state, compacted_at, started_at, "
    "completed_at, token_estimate, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _insert_parts(
    conn: sqlite3.Connection,
    message_id: str,
    session_id: str,
    first_ordinal: int,
    rows: Sequence[tuple[str, int, dict[str, Any]]],
    now: int,
) -> None:
    """Insert encoded parts ``(part_id, token_estimate, columns)`` of one message."""
    conn.executemany(
        _PART_INSERT,
        [
            (
                pid,
                message_id,
                session_id,
                first_ordinal + offset,
                r["part_type"],
                r["content"],
                r["text_content"],
                r["tool_name"],
                r["tool_call_id"],
                r["tool_state"],
                r["compacted_at"],
                r["started_at"],
                r["completed_at"],
                est,
                now,
            )
            for offset, (pid, est, r) in enumerate(rows)
        ],
    )


def _filter_sql(where: SearchFilter, scope: str) -> tuple[str, list[Any]]:
    """Time-range and lineage clauses (not the session filter) for a search."""
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
            clauses.append("AND 0")
    return " ".join(clauses), args


def _get_file(conn: sqlite3.Connection, key: str) -> FileReference | None:
    row = conn.execute(
        "SELECT content_id, file_id, path, file_type, token_count, exploration_summary, "
        "byte_size, session_id, created_at FROM file_references "
        "WHERE content_id = ? OR file_id = ?",
        (key, key),
    ).fetchone()
    if row is None:
        return None
    return FileReference(*row)
