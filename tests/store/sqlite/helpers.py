"""Reaching the SQLite database under a store, for tests of what the file enforces."""

from __future__ import annotations

import random
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from typing import cast

from mnesis.models.parts import (
    FileRefPart,
    MessagePart,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.store import ImmutableStore, SQLiteStore
from mnesis.store.base import NewMessage
from mnesis.store.shared.rows import encode_parts, message_row, part_rows
from mnesis.store.shared.search_context import NEIGHBOURS_SELECT, Contexts, neighbour_args
from mnesis.store.shared.sql import MESSAGE_INSERT, PART_INSERT
from mnesis.store.sqlite import SQLiteDatabase

_TOKENIZE = "tokenize='porter unicode61 remove_diacritics 2'"

Tokens = dict[int, list[tuple[str, int]]]
"""Row key → the tokens of one column with their positions."""


def sqlite_db(store: ImmutableStore) -> SQLiteDatabase:
    """The SQLite database under a store (for raw reads and writes in tests)."""
    return cast(SQLiteStore, store.backend).db


def random_parts(
    rng: random.Random,
    words: Sequence[str],
    max_words: int,
    *,
    file_refs: bool = False,
    running_tools: bool = False,
) -> list[MessagePart]:
    """Up to three random parts: text, reasoning, tool calls (completed, or also still
    running) and, if asked, file references, each of 1 to ``max_words`` words."""
    parts: list[MessagePart] = []
    for _ in range(rng.randrange(0, 4)):
        text = " ".join(rng.choice(words) for _ in range(rng.randrange(1, max_words)))
        kind = rng.randrange(4 if file_refs else 3)
        if kind == 0:
            parts.append(TextPart(text=text))
        elif kind == 1:
            parts.append(ReasoningPart(text=text))
        elif kind == 2:
            done = rng.random() < 0.5 if running_tools else True
            parts.append(
                ToolPart(
                    tool_name="read",
                    tool_call_id=f"call_{rng.getrandbits(64):x}",
                    input={"q": text[:20]},
                    output=text if done else None,
                    status=ToolStatus(state="completed" if done else "running"),
                )
            )
        else:
            parts.append(FileRefPart(content_id="c", path="a.txt", exploration_summary=text))
    return parts


def append_as_before(conn: sqlite3.Connection, batch: Sequence[NewMessage]) -> None:
    """Append messages to an older schema as a store of its release did: each part row
    with its ``search_context`` stored, indexed by the schema's per-row trigger."""
    with conn:
        for item in batch:
            m = item.message
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?",
                (m.session_id,),
            ).fetchone()[0]
            rows = encode_parts(item.parts, item.part_tokens)
            contexts = Contexts()
            found = conn.execute(NEIGHBOURS_SELECT, neighbour_args(m.session_id, seq))
            contexts.start(m.session_id, seq, found.fetchall())
            contexts.apply(m.session_id, seq, m.role, m.created_at, m.is_summary, rows)
            conn.execute(MESSAGE_INSERT, message_row(m, seq, int(m.is_summary)))
            conn.executemany(PART_INSERT, part_rows(m.id, m.session_id, 0, rows, m.created_at))
            conn.execute(
                "INSERT INTO context_items (session_id, position, item_type, message_id, "
                "tokens, created_at) VALUES (?, (SELECT COALESCE(MAX(position), 0) + 1 "
                "FROM context_items WHERE session_id = ?), 'message', ?, 0, ?)",
                (m.session_id, m.session_id, m.id, m.created_at),
            )


def indexed_contexts(conn: sqlite3.Connection) -> Tokens:
    """The tokens (with positions) the full-text index holds in each row's ``context``."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.parts_vocab "
        "USING fts5vocab(main, message_parts_fts, instance)"
    )
    out: Tokens = defaultdict(list)
    for term, doc, offset in conn.execute(
        "SELECT term, doc, offset FROM temp.parts_vocab WHERE col = 'context' ORDER BY doc, offset"
    ):
        out[doc].append((term, offset))
    return dict(out)


def tokens_of(conn: sqlite3.Connection, contexts: dict[int, str | None]) -> Tokens:
    """The tokens (with positions) the index's tokenizer makes of each context."""
    conn.execute(f"CREATE VIRTUAL TABLE temp.expected USING fts5(context, {_TOKENIZE})")
    conn.executemany(
        "INSERT INTO temp.expected (rowid, context) VALUES (?, ?)",
        [(k, c) for k, c in contexts.items() if c is not None],
    )
    conn.execute(
        "CREATE VIRTUAL TABLE temp.expected_vocab USING fts5vocab(temp, expected, instance)"
    )
    out: Tokens = defaultdict(list)
    for term, doc, offset in conn.execute(
        "SELECT term, doc, offset FROM temp.expected_vocab ORDER BY doc, offset"
    ):
        out[doc].append((term, offset))
    conn.execute("DROP TABLE temp.expected_vocab")
    conn.execute("DROP TABLE temp.expected")
    return dict(out)
