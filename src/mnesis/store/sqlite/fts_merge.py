"""Keeping the message full-text index in few segments, off the commit path.

Every commit adds small segments to FTS5's index and FTS5 merges them only into
levels, so a long session's index holds a few dozen segments and every query looks
each term up in all of them (at 100k messages a grep spends most of its time there).
:func:`merge_step` runs on the checkpoint thread's own connection: when the index has
more than :data:`MAX_SEGMENTS` segments it does one bounded step of FTS5's
incremental optimize (``'merge'`` with a negative page count), in a short
transaction that gives way at once when the writer holds the lock. Steps repeat on
later checkpoints until the index is down to :data:`DONE_SEGMENTS`, so no commit ever pays for
a merge and a write waits at most one step.
"""

from __future__ import annotations

import sqlite3

__all__ = [
    "DONE_SEGMENTS",
    "MAX_SEGMENTS",
    "STEP_PAGES",
    "MergeState",
    "merge_all",
    "merge_step",
    "segment_count",
]

MAX_SEGMENTS = 8
"""Segments above which a merge starts."""

DONE_SEGMENTS = 2
"""Segments at which a merge under way stops (new commits keep adding small ones)."""

STEP_PAGES = 256
"""Pages written by one merge step (a few milliseconds of work)."""

_TABLE = "message_parts_fts"


class MergeState:
    """Whether a merge is under way (it continues down to :data:`DONE_SEGMENTS`)."""

    def __init__(self) -> None:
        self.merging = False
        self.steps = 0
        """Steps done so far (for tests and benchmarks)."""


def segment_count(conn: sqlite3.Connection) -> int:
    """How many segments the message full-text index holds now."""
    row = conn.execute(f"SELECT count(DISTINCT segid) FROM {_TABLE}_idx").fetchone()
    return int(row[0])


def merge_step(conn: sqlite3.Connection, state: MergeState) -> bool:
    """Do one merge step if one is due; ``True`` when it wrote something.

    ``conn`` must be a connection of its own (not the writer's) in autocommit mode;
    a busy database skips the step (the next checkpoint tries again)."""
    segments = segment_count(conn)
    if segments <= (DONE_SEGMENTS if state.merging else MAX_SEGMENTS):
        state.merging = False
        return False
    state.merging = True
    busy_ms = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
    try:
        conn.execute(f"INSERT INTO {_TABLE} ({_TABLE}, rank) VALUES ('merge', ?)", (-STEP_PAGES,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    state.steps += 1
    return True


def merge_all(conn: sqlite3.Connection) -> None:
    """Merge the whole index into one segment (FTS5's ``'optimize'``): the index's
    layout then depends on its rows alone, not on when earlier merges ran."""
    with conn:
        conn.execute(f"INSERT INTO {_TABLE}({_TABLE}) VALUES ('optimize')")
