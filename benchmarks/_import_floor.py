"""The floor of the import benchmark: the writes ``append_batch`` does on SQLite (m009:
the parts inserted without their neighbour context, then indexed with it; see
:mod:`mnesis.store.sqlite.fts_index`), with plain ``sqlite3``, statement by statement.

The rows are read back from the database an import filled (the contexts rebuilt from
history exactly as a purge rebuilds them) and written, outside any Python, into a fresh
mnesis database opened with the store's pragmas, in one transaction and in the store's
order: ``messages``, ``message_parts`` (the insert trigger held off), the part keys read
back, the full-text index, ``context_slots`` (m010: the integer-keyed table under the
``context_items`` view, written directly as the store's writer does). The CPU of each
statement is reported on its own, so a change to one (a pragma, an index) shows where
it lands.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnesis.store.shared.search_context import SESSION_PARTS_SELECT, rebuild_contexts
from mnesis.store.shared.sql import MESSAGE_COLUMNS, MESSAGE_INSERT, PART_INSERT, select_list
from mnesis.store.sqlite.context_slots import MESSAGE_SLOT_INSERT
from mnesis.store.sqlite.fts_index import FTS_INSERT, HOLD_TRIGGER, RELEASE_TRIGGER

__all__ = ["FloorRows", "floor_rows", "run_floor"]

_PART_SELECT = (
    "SELECT id, message_id, session_id, ordinal, part_type, content, text_content, "
    "tool_name, tool_call_id, tool_state, compacted_at, started_at, completed_at, "
    "token_estimate, created_at, NULL, rowid FROM message_parts ORDER BY rowid"
)
_STORE_PRAGMAS = (
    "PRAGMA foreign_keys = ON",
    "PRAGMA journal_mode = WAL",
    "PRAGMA wal_autocheckpoint = 0",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA temp_store = MEMORY",
)


@dataclass(slots=True)
class FloorRows:
    """The rows an import stored, as the store's statements take them."""

    sessions: tuple[list[str], list[tuple[Any, ...]]]
    messages: list[tuple[Any, ...]]
    parts: list[tuple[Any, ...]]
    """Values of ``PART_INSERT`` (``search_context`` None, as the store inserts them)."""
    indexed: dict[str, tuple[str, str | None, str | None, str]]
    """Part ID → ``(part_type, text, context, session_id)`` of each part with text."""
    context: list[tuple[Any, ...]]


def floor_rows(source: str) -> FloorRows:
    """Read the rows of the database an import filled."""
    with contextlib.closing(sqlite3.connect(source)) as src:
        columns = [row[1] for row in src.execute("PRAGMA table_xinfo(sessions)")]
        sessions = src.execute(f"SELECT {', '.join(columns)} FROM sessions ORDER BY rowid")
        session_rows = sessions.fetchall()
        messages = src.execute(
            f"SELECT {select_list(MESSAGE_COLUMNS)}, seq FROM messages ORDER BY rowid"
        ).fetchall()
        parts = [row[:-1] for row in src.execute(_PART_SELECT)]
        contexts: dict[int, str | None] = {}
        for (session_id,) in src.execute("SELECT id FROM sessions").fetchall():
            contexts.update(rebuild_contexts(src.execute(SESSION_PARTS_SELECT, (session_id,))))
        keys = [row[0] for row in src.execute("SELECT rowid FROM message_parts ORDER BY rowid")]
        indexed = {
            row[0]: (row[4], row[6], contexts.get(key), row[2])
            for row, key in zip(parts, keys, strict=True)
            if row[6] is not None
        }
        context = src.execute(
            "SELECT session_id, position, message_id, tokens, created_at FROM context_items "
            "WHERE item_type = 'message' ORDER BY session_id, position"
        ).fetchall()
    return FloorRows((columns, session_rows), messages, parts, indexed, context)


@dataclass(slots=True)
class FloorTimes:
    """CPU seconds of each statement, and the transaction's wall clock and CPU."""

    statements: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0
    cpu: float = 0.0


def _fts_values(
    keys: dict[str, int], indexed: dict[str, tuple[str, str | None, str | None, str]]
) -> list[tuple[Any, ...]]:
    out = []
    for part_id, (part_type, text, context, session_id) in indexed.items():
        tool = part_type == "tool"
        out.append((keys[part_id], None if tool else text, text if tool else None, context,
                    session_id[5:]))  # fmt: skip
    return out


def run_floor(
    rows: FloorRows, target: str, *, fts: bool = True, pragmas: Sequence[str] = ()
) -> FloorTimes:
    """Write ``rows`` into ``target`` (a fresh mnesis database) as ``append_batch`` does,
    in one transaction; ``fts=False`` leaves the full-text index out; ``pragmas`` run
    after the store's own."""
    times = FloorTimes()
    with contextlib.closing(sqlite3.connect(target, isolation_level=None)) as dst:
        for pragma in (*_STORE_PRAGMAS, *pragmas):
            dst.execute(pragma)
        columns, session_rows = rows.sessions
        marks = ", ".join("?" for _ in columns)
        started, cpu = time.perf_counter(), time.process_time()

        def step(name: str, sql: str, args: Sequence[Any], many: bool = True) -> Any:
            before = time.process_time()
            result = dst.executemany(sql, args) if many else dst.execute(sql, args)
            times.statements[name] = time.process_time() - before
            return result

        dst.execute("BEGIN IMMEDIATE")
        step("sessions", f"INSERT INTO sessions ({', '.join(columns)}) VALUES ({marks})",
             session_rows)  # fmt: skip
        step("messages", MESSAGE_INSERT, rows.messages)
        before = time.process_time()
        last = dst.execute("SELECT COALESCE(MAX(rowid), 0) FROM message_parts").fetchone()[0]
        dst.execute(HOLD_TRIGGER)
        dst.executemany(PART_INSERT, rows.parts)
        times.statements["message_parts"] = time.process_time() - before
        before = time.process_time()
        keys = dict(dst.execute("SELECT id, rowid FROM message_parts WHERE rowid > ?", (last,)))
        times.statements["part keys read back"] = time.process_time() - before
        if fts:
            step("full-text index", FTS_INSERT, _fts_values(keys, rows.indexed))
        dst.execute(RELEASE_TRIGGER)
        step("context_items", MESSAGE_SLOT_INSERT, rows.context)
        before = time.process_time()
        dst.execute("COMMIT")
        times.statements["commit"] = time.process_time() - before
        times.wall, times.cpu = time.perf_counter() - started, time.process_time() - cpu
    return times
