"""Raw ``sqlite3`` writes into a store, as a bug or a careless operator would make them.

:func:`tampering` opens its own connection with foreign keys off and, for the history
tables the append-only triggers protect, drops the named triggers for the length of one
transaction and re-creates them before it commits, so the schema the store sees
afterwards is the one mnesis made. The other helpers read or rewrite the context view
and the summary lineage on such a connection.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from mnesis import TextPart, TokenEstimator
from mnesis.models.ids import new_id
from mnesis.store.codec import encode_part
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS

__all__ = [
    "add_lineage",
    "append_tool_message",
    "context_of",
    "covered_messages",
    "dangling_message_key",
    "insert_summary",
    "raw_messages",
    "rewrite_context",
    "summaries_in_context",
    "tampering",
]


@contextmanager
def tampering(db_path: str, *, drop_triggers: Sequence[str] = ()) -> Iterator[sqlite3.Connection]:
    """One transaction on a raw connection, foreign keys off, the named append-only
    triggers dropped inside it and re-created before the commit."""
    conn = sqlite3.connect(db_path, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN IMMEDIATE")
        saved: list[str] = []
        for name in drop_triggers:
            row = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)
            ).fetchone()
            assert row is not None, f"no trigger {name}"
            saved.append(row[0])
            conn.execute(f"DROP TRIGGER {name}")
        try:
            yield conn
            for sql in saved:
                conn.execute(sql)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


def context_of(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, str]]:
    """The context view as ``(item_type, id)`` pairs, in position order."""
    return [
        (kind, message_id or summary_id)
        for kind, message_id, summary_id in conn.execute(
            "SELECT item_type, message_id, summary_id FROM context_items "
            "WHERE session_id = ? ORDER BY position",
            (session_id,),
        )
    ]


def rewrite_context(
    conn: sqlite3.Connection, session_id: str, items: Sequence[tuple[str, str]]
) -> None:
    """Replace the context view with ``items`` at positions 1..n (tokens kept per item)."""
    tokens = {
        (message_id or summary_id): count
        for message_id, summary_id, count in conn.execute(
            "SELECT message_id, summary_id, tokens FROM context_items WHERE session_id = ?",
            (session_id,),
        )
    }
    conn.execute("DELETE FROM context_items WHERE session_id = ?", (session_id,))
    conn.executemany(
        "INSERT INTO context_items (session_id, position, item_type, message_id, summary_id, "
        "tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                session_id,
                position,
                kind,
                item_id if kind == "message" else None,
                item_id if kind == "summary" else None,
                tokens.get(item_id, 10),
                int(time.time() * 1000),
            )
            for position, (kind, item_id) in enumerate(items, start=1)
        ],
    )


def dangling_message_key(conn: sqlite3.Connection, session_id: str) -> str:
    """Append a context item whose integer message key names no message (m010 keys the
    context by ``messages.rowid``, so no text ID can name a missing one); what the
    integrity snapshot calls it."""
    key = conn.execute("SELECT MAX(rowid) + 1000000 FROM messages").fetchone()[0]
    conn.execute(
        "INSERT INTO context_slots (session_key, position, item_type, message_key, tokens, "
        "created_at) SELECT rowid, (SELECT MAX(position) + 1 FROM context_items "
        "WHERE session_id = ?), 'message', ?, 10, 0 FROM sessions WHERE id = ?",
        (session_id, key, session_id),
    )
    return f"message_key:{key}"


def raw_messages(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """Conversation message IDs (no summary markers), in ``seq`` order."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM messages WHERE session_id = ? AND is_summary = 0 ORDER BY seq",
            (session_id,),
        )
    ]


def summaries_in_context(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """Summary IDs of the context view, in position order."""
    return [item_id for kind, item_id in context_of(conn, session_id) if kind == "summary"]


def covered_messages(conn: sqlite3.Connection, summary_id: str) -> list[str]:
    """Every message under a summary, through all levels, in ``seq`` order."""
    return [
        r[0]
        for r in conn.execute(
            "WITH RECURSIVE down(id) AS (SELECT ? UNION SELECT sp.parent_summary_id "
            "FROM summary_parents sp JOIN down ON sp.summary_id = down.id) "
            "SELECT m.id FROM summary_messages sm JOIN down ON sm.summary_id = down.id "
            "JOIN messages m ON m.id = sm.message_id ORDER BY m.seq",
            (summary_id,),
        )
    ]


def insert_summary(
    conn: sqlite3.Connection,
    session_id: str,
    *,
    sources: Sequence[str] = (),
    merges: Sequence[str] = (),
    span: tuple[str, str] | None = None,
    file_ids: Sequence[str] = (),
) -> str:
    """Write a summary row (not in the context) with the given lineage; returns its ID."""
    summary_id = new_id("sum")
    start, end = span or ((sources[0], sources[-1]) if sources else (None, None))
    conn.execute(
        "INSERT INTO summaries (id, session_id, kind, depth, level, content, token_count, "
        "file_ids, message_id, span_start_message_id, span_end_message_id, "
        "source_message_count, search_text, created_at) "
        "VALUES (?, ?, ?, ?, 1, ?, 40, ?, NULL, ?, ?, ?, ?, ?)",
        (
            summary_id,
            session_id,
            "condensed" if merges else "leaf",
            1 if merges else 0,
            "## Goal\n- injected by a test",
            json.dumps(list(file_ids)),
            start,
            end,
            len(sources),
            "injected by a test",
            int(time.time() * 1000),
        ),
    )
    add_lineage(conn, summary_id, sources=sources, merges=merges)
    return summary_id


def add_lineage(
    conn: sqlite3.Connection,
    summary_id: str,
    *,
    sources: Sequence[str] = (),
    merges: Sequence[str] = (),
) -> None:
    """Append ``summary_messages`` / ``summary_parents`` rows to a summary."""
    conn.executemany(
        "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
        [(summary_id, m, 1000 + i) for i, m in enumerate(sources)],
    )
    conn.executemany(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)",
        [(summary_id, s, 1000 + i) for i, s in enumerate(merges)],
    )


def append_tool_message(conn: sqlite3.Connection, session_id: str, *, in_context: bool) -> str:
    """Write a ``tool``-role message (one text part) at the end of the session."""
    part = TextPart(text="exit status 0: 14 passed in 0.31s")
    tokens = MESSAGE_OVERHEAD_TOKENS + TokenEstimator().estimate_part(part)
    message_id, now = new_id("msg"), int(time.time() * 1000)
    seq = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?", (session_id,)
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO messages (id, session_id, seq, role, created_at, token_estimate) "
        "VALUES (?, ?, ?, 'tool', ?, ?)",
        (message_id, session_id, seq, now, tokens),
    )
    row = encode_part(part)
    conn.execute(
        "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
        "text_content, token_estimate, created_at) VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?)",
        (
            new_id("part"),
            message_id,
            session_id,
            row["part_type"],
            row["content"],
            row["text_content"],
            tokens - MESSAGE_OVERHEAD_TOKENS,
            now,
        ),
    )
    if in_context:
        items = context_of(conn, session_id)
        rewrite_context(conn, session_id, [*items, ("message", message_id)])
    return message_id
