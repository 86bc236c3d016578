"""The *floor* of the session benchmarks: what a hand-written application would do with
plain SQL on a database mnesis created, on SQLite (``sqlite3``) and on PostgreSQL
(``psycopg``). A turn writes the same rows mnesis writes (two messages, their parts, two
context items) in one transaction; the context is assembled the same way (summaries,
then the newest messages that fit the budget, their parts decoded and joined). The
statements and rows are written once; only the driver calls differ."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from mnesis.store.sqlite.context_slots import (
    MESSAGE_SLOT_INSERT,
    SUMMARY_ITEMS,
    SUMMARY_ITEMS_BEFORE,
)

if TYPE_CHECKING:
    from benchmarks.bench_session import Workload

__all__ = [
    "FloorSession",
    "floor_connect",
    "floor_context",
    "floor_turn",
    "pg_floor_context",
    "pg_floor_turn",
]

_MSG_INSERT = (
    "INSERT INTO messages (id, session_id, seq, role, created_at, agent, model_id, provider_id, "
    "parent_id, tokens_input, tokens_output, tokens_total, finish_reason, token_estimate) "
    "VALUES (?, ?, ?, ?, ?, 'default', ?, ?, ?, ?, ?, ?, ?, ?)"
)
_PART_INSERT = (
    "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
    "text_content, tool_name, tool_call_id, tool_state, started_at, completed_at, "
    "token_estimate, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_CONTEXT_INSERT = (
    "INSERT INTO context_items (session_id, position, item_type, message_id, tokens, created_at) "
    "VALUES (?, ?, 'message', ?, ?, ?)"
)
_SUMMARIES = (
    "SELECT ci.tokens, s.content FROM {source}"
    "JOIN summaries s ON s.id = ci.summary_id "
    "WHERE ci.session_id = ? AND ci.item_type = 'summary' ORDER BY ci.position"
)
_NEWEST_FIRST = (
    "SELECT message_id, tokens FROM context_items WHERE session_id = ? "
    "AND item_type = 'message' ORDER BY position DESC"
)

_Statement = tuple[str, Sequence[Any] | Sequence[Sequence[Any]]]


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


@dataclass(slots=True)
class FloorSession:
    """A session the floor writes to, on a ``sqlite3`` or ``psycopg`` connection."""

    conn: Any
    session_id: str
    seq: int = 0
    position: int = 0


def floor_connect(path: str) -> sqlite3.Connection:
    """A plain connection with the pragmas mnesis uses (WAL, synchronous=NORMAL)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


def _rid(prefix: str) -> str:
    return f"{prefix}_{os.urandom(13).hex()}"


def _turn_statements(fs: FloorSession, workload: Workload, turn: int) -> list[_Statement]:
    """The statements of one turn, in order: per message its row, its parts
    (``executemany``), its context item."""
    now = int(time.time() * 1000)
    user_text = workload.user_text(turn)
    reply = workload.reply_texts[turn % len(workload.reply_texts)]
    call = workload.tool_call(turn)
    user_id, assistant_id = _rid("msg"), _rid("msg")
    user_parts = [("text", json.dumps({"type": "text", "text": user_text}), user_text, None)]
    assistant_parts: list[tuple[str, str, str, dict[str, Any] | None]] = [
        ("text", json.dumps({"type": "text", "text": reply}), reply, None)
    ]
    if call is not None:
        content = json.dumps(
            {"type": "tool", **call, "status": {"state": "completed", "started_at": now}}
        )
        searchable = f"{call['tool_name']}\n{json.dumps(call['input'])}\n{call['output']}"
        assistant_parts.append(("tool", content, searchable, call))
    out: list[_Statement] = []
    for message_id, role, parent, parts in (
        (user_id, "user", None, user_parts),
        (assistant_id, "assistant", user_id, assistant_parts),
    ):
        tokens = sum(len(p[2]) for p in parts) // 4 + 4
        fs.seq += 1
        fs.position += 1
        assistant = role == "assistant"
        out.append(
            (
                _MSG_INSERT,
                (message_id, fs.session_id, fs.seq, role, now, "bench" if assistant else None,
                 "fake" if assistant else None, parent, tokens, tokens, 2 * tokens,
                 "stop" if assistant else None, tokens),
            )
        )  # fmt: skip
        out.append(
            (
                _PART_INSERT,
                [
                    (_rid("part"), message_id, fs.session_id, ordinal, kind, content, text,
                     None if tool is None else tool["tool_name"],
                     None if tool is None else tool["tool_call_id"],
                     None if tool is None else "completed",
                     None if tool is None else now, None if tool is None else now,
                     len(text) // 4, now)
                    for ordinal, (kind, content, text, tool) in enumerate(parts)
                ],
            )
        )  # fmt: skip
        out.append((_CONTEXT_INSERT, (fs.session_id, fs.position, message_id, tokens, now)))
    return out


def floor_turn(fs: FloorSession, workload: Workload, turn: int) -> None:
    """One turn by hand on SQLite: ``BEGIN IMMEDIATE`` … ``COMMIT``."""
    conn: sqlite3.Connection = fs.conn
    statements = _turn_statements(fs, workload, turn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, args in statements:
            if sql is _PART_INSERT:
                conn.executemany(sql, args)
            else:
                # The store's writer fills the integer-keyed table under the view (m010).
                conn.execute(MESSAGE_SLOT_INSERT if sql is _CONTEXT_INSERT else sql, args)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def pg_floor_turn(fs: FloorSession, workload: Workload, turn: int) -> None:
    """One turn by hand on PostgreSQL: one transaction."""
    conn: psycopg.Connection[Any] = fs.conn
    statements = _turn_statements(fs, workload, turn)
    with conn.transaction(), conn.cursor() as cur:
        for sql, args in statements:
            if sql is _PART_INSERT:
                cur.executemany(_pg(sql), args)
            else:
                cur.execute(_pg(sql), args)


def _newest_that_fit(rows: Iterable[tuple[str, int]], remaining: int) -> list[str]:
    """The message IDs of ``(message_id, tokens)`` rows, newest first, that fit."""
    chosen: list[str] = []
    for message_id, tokens in rows:
        if tokens > remaining:
            break
        remaining -= tokens
        chosen.append(message_id)
    return chosen


def _stored_part(content: str, text_content: str | None) -> dict[str, Any]:
    # The store keeps each text once: "@text" names the field text_content holds.
    part: dict[str, Any] = json.loads(content)
    where = part.pop("@text", None)
    if isinstance(where, str):
        part[where] = text_content
    elif isinstance(where, list) and text_content is not None:
        field, start, length = where
        part[field] = text_content[start : start + length]
    return part


def _render(part: dict[str, Any], compacted_at: int | None) -> str | None:
    kind = part.get("type")
    if kind == "text":
        return None if part.get("ignored") else str(part["text"])
    if kind == "tool":
        if compacted_at is not None:
            return f"[Tool '{part['tool_name']}' output compacted at {compacted_at}]"
        args = json.dumps(part.get("input", {}), ensure_ascii=False, sort_keys=True)
        return (
            f"[Tool: {part['tool_name']}] id={part['tool_call_id']}\nInput: {args}\n"
            f"Output:\n{part.get('output') or ''}\n[/Tool]"
        )
    return None


def _assemble(
    system_prompt: str,
    summaries: Sequence[tuple[int, str]],
    chosen: Sequence[str],
    roles: dict[str, str],
    part_rows: Iterable[tuple[str, str, str | None, int | None]],
) -> list[dict[str, Any]]:
    texts: dict[str, list[str]] = defaultdict(list)
    for message_id, content, text_content, compacted_at in part_rows:
        piece = _render(_stored_part(content, text_content), compacted_at)
        if piece:
            texts[message_id].append(piece)
    out: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    out.extend({"role": "user", "content": content} for _, content in summaries)
    out.extend({"role": roles[m], "content": "\n\n".join(texts[m])} for m in chosen)
    return out


def floor_context(
    conn: sqlite3.Connection, session_id: str, budget: int, system_prompt: str
) -> list[dict[str, Any]]:
    """The context assembled with plain SQL on SQLite."""
    try:
        # The store's read of the context's summaries (m010: the slots' partial index).
        summaries = conn.execute(_SUMMARIES.format(source=SUMMARY_ITEMS), (session_id,)).fetchall()
    except sqlite3.OperationalError:  # a database before m010
        summaries = conn.execute(
            _SUMMARIES.format(source=SUMMARY_ITEMS_BEFORE), (session_id,)
        ).fetchall()
    cursor = conn.execute(_NEWEST_FIRST, (session_id,))
    chosen = _newest_that_fit(cursor, budget - sum(row[0] for row in summaries))
    cursor.close()
    chosen.reverse()
    ids = json.dumps(chosen)
    roles = dict(
        conn.execute(
            "SELECT id, role FROM messages WHERE id IN (SELECT value FROM json_each(?))", (ids,)
        ).fetchall()
    )
    part_rows = conn.execute(
        "SELECT message_id, content, text_content, compacted_at FROM message_parts "
        "WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY message_id, ordinal",
        (ids,),
    )
    return _assemble(system_prompt, summaries, chosen, roles, part_rows)


def pg_floor_context(
    conn: psycopg.Connection[Any], session_id: str, budget: int, system_prompt: str
) -> list[dict[str, Any]]:
    """The same assembly in PostgreSQL's SQL (the newest messages through a server-side
    cursor)."""
    summaries = conn.execute(
        _pg(_SUMMARIES.format(source="context_items ci ")), (session_id,)
    ).fetchall()
    with conn.cursor(name="floor_tail") as cursor:
        cursor.itersize = 500
        cursor.execute(_pg(_NEWEST_FIRST), (session_id,))
        chosen = _newest_that_fit(cursor, budget - sum(row[0] for row in summaries))
    conn.commit()
    chosen.reverse()
    roles = dict(
        conn.execute("SELECT id, role::text FROM messages WHERE id = ANY(%s)", (chosen,)).fetchall()
    )
    part_rows = conn.execute(
        "SELECT message_id, content, text_content, compacted_at FROM message_parts "
        "WHERE message_id = ANY(%s) ORDER BY message_id, ordinal",
        (chosen,),
    )
    return _assemble(system_prompt, summaries, chosen, roles, part_rows)
