"""Which of a few known rows a full-text expression matches, without walking the index.

FTS5 answers ``MATCH 'a AND b' AND rowid = ?`` (or a ``NEAR`` group) by walking from the
first row that matches the whole expression, then on to the next match past the rowid:
on a 1M-message index, a walk of the terms' postings per question. The relevance walk
(:mod:`~mnesis.store.sqlite.search_levels`) often knows every row a combination can
match (a pair of its terms few rows hold); it then asks here instead:

* :func:`holding`: which of the rows hold each of some terms, one index seek per row
  and term (a seek for one term is cheap);
* :func:`tool_parts`: which of the rows are tool parts (a part's text is indexed as
  conversation text or as tool input/output, never both, by its type);
* :func:`near_matches`: which of them match each expression, as the message index would
  say, by indexing just those rows' text in a scratch in-memory FTS5 table with the
  message index's tokenizer (bounded by ``SCRATCH_CHARS``).
"""

from __future__ import annotations

import sqlite3
import threading

from mnesis.store.codec import dumps

__all__ = ["SCRATCH_CHARS", "TOKENIZE", "holding", "near_matches", "tool_parts"]

_SEEKS = 100
"""Most seeks per statement (SQLite allows 500 terms in a compound ``SELECT``)."""

TOKENIZE = "porter unicode61 remove_diacritics 2"
"""The message full-text index's tokenizer (``message_parts_fts``, migration m001)."""
SCRATCH_CHARS = 262_144
"""Most text the scratch index takes per call; with more, the caller walks the index."""

_local = threading.local()


def holding(
    conn: sqlite3.Connection, table: str, checks: list[tuple[str, list[str], list[int]]]
) -> list[list[int]]:
    """For each ``(columns, terms, rowids)``, those of the rowids (ascending) whose row
    holds every term in the columns: term by term, one index seek per remaining row
    (a seek for one term is cheap; FTS5 answers ``MATCH 'a AND b' AND rowid = ?`` by
    walking from the first row both terms hold), ``_SEEKS`` per statement."""
    out = [sorted(rows) for _, _, rows in checks]
    for depth in range(max((len(terms) for _, terms, _ in checks), default=0)):
        probes = [
            (index, f"{columns} : ({terms[depth]})", rowid)
            for index, (columns, terms, _) in enumerate(checks)
            if depth < len(terms)
            for rowid in out[index]
        ]
        held: set[tuple[int, int]] = set()
        for start in range(0, len(probes), _SEEKS):
            chunk = probes[start : start + _SEEKS]
            sql = " UNION ALL ".join(
                f"SELECT {index}, rowid FROM {table} WHERE {table} MATCH ? AND rowid = ?"
                for index, _, _ in chunk
            )
            args = [value for _, match, rowid in chunk for value in (match, rowid)]
            held.update(conn.execute(sql, args))
        out = [
            [r for r in rows if (index, r) in held] if depth < len(checks[index][1]) else rows
            for index, rows in enumerate(out)
        ]
    return out


def tool_parts(conn: sqlite3.Connection, rowids: list[int]) -> set[int]:
    """The rowids among ``rowids`` that are tool parts (one statement)."""
    if not rowids:
        return set()
    return {
        r[0]
        for r in conn.execute(
            "SELECT rowid FROM message_parts WHERE rowid IN (SELECT value FROM json_each(?)) "
            "AND part_type = 'tool'",
            (dumps(rowids),),
        )
    }


def near_matches(
    conn: sqlite3.Connection, checks: list[tuple[str, list[int]]]
) -> list[list[int]] | None:
    """For each ``(match, rowids)`` (tool parts of ``message_parts``), those rowids
    (ascending) whose row the ``message_parts_fts`` expression ``match`` matches, by
    the rows' own text and session; None when their text is over ``SCRATCH_CHARS``."""
    wanted = sorted({r for _, rows in checks for r in rows})
    if not wanted:
        return [[] for _ in checks]
    args = (dumps(wanted),)
    (size,) = conn.execute(
        "SELECT COALESCE(SUM(length(text_content)), 0) FROM message_parts "
        "WHERE rowid IN (SELECT value FROM json_each(?))",
        args,
    ).fetchone()
    if size > SCRATCH_CHARS:
        return None
    rows = conn.execute(
        "SELECT rowid, text_content, substr(session_id, 6) FROM message_parts "
        "WHERE rowid IN (SELECT value FROM json_each(?))",
        args,
    ).fetchall()
    scratch = _scratch()
    with scratch:
        scratch.execute("DELETE FROM scratch")
        scratch.executemany(
            "INSERT INTO scratch (rowid, tool_content, session_id) VALUES (?, ?, ?)", rows
        )
        out: list[list[int]] = []
        for match, rowids in checks:
            mine = set(rowids)
            out.append(
                sorted(
                    r[0]
                    for r in scratch.execute(
                        "SELECT rowid FROM scratch WHERE scratch MATCH ?", (match,)
                    )
                    if r[0] in mine
                )
            )
        scratch.execute("DELETE FROM scratch")
    return out


def _scratch() -> sqlite3.Connection:
    """This thread's scratch in-memory database (its index has the message index's
    columns and tokenizer)."""
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=True)
        conn.execute(
            "CREATE VIRTUAL TABLE scratch USING fts5(text_content, tool_content, context, "
            f"session_id, tokenize='{TOKENIZE}')"
        )
        _local.conn = conn
    return conn
