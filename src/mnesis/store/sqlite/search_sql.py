"""The SQL of SQLite's full-text search (:class:`~mnesis.store.sqlite.search.SQLiteSearch`):
FTS5 ``MATCH`` expressions (:func:`render_fts5`), the ranked and by-key statements, and
the probes that choose between plans (whether a session filter is worth intersecting in
the index). Each function takes the connection of its caller's read."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from typing import Any

from mnesis.store.base import SearchFilter
from mnesis.store.codec import dumps
from mnesis.store.search_query import QuerySyntax, SearchQuery, Term, render_query
from mnesis.store.shared.search_filter import range_and_lineage
from mnesis.store.shared.sql import DOWN_CTE

__all__ = ["FTS_SESSION_TOKEN_MIN_MESSAGES", "render_fts5"]

FTS_SESSION_TOKEN_MIN_MESSAGES = 20_000
"""Below this many stored messages the session filter is applied after the join."""

_TOOL_WEIGHT = 0.35
"""BM25 weight of tool input/output relative to conversation text."""
_CONTEXT_WEIGHT = 0.3
"""BM25 weight of a part's neighbour context (speaker, date, previous turns)."""
_BM25 = f"bm25(message_parts_fts, 1.0, {_TOOL_WEIGHT}, {_CONTEXT_WEIGHT}, 0.0)"


def _ranked(
    conn: sqlite3.Connection,
    scope: str,
    match: str,
    clauses: str,
    args: list[Any],
    where: SearchFilter,
    limit: int,
    offset: int,
    candidates: int,
) -> list[Any]:
    """Best ``bm25`` first: the index ranks, the best ``candidates`` are joined."""
    if scope == "summaries":
        sql = (
            "SELECT s.rowid, NULL, s.id, s.session_id, s.content, NULL, s.created_at, f.rank, "
            "NULL, NULL FROM summaries_fts f JOIN summaries s ON s.rowid = f.rowid "
            f"WHERE summaries_fts MATCH ? {clauses} ORDER BY f.rank LIMIT ? OFFSET ?"
        )
        return conn.execute(sql, [match, *args, limit, offset]).fetchall()
    sql = (
        f"{DOWN_CTE if where.under_summary else ''} "
        "SELECT p.rowid, p.id, p.message_id, p.session_id, p.text_content, m.role, "
        "m.created_at, f.score, p.tool_name, p.part_type, f.returned FROM "
        "(SELECT rowid, score, count(*) OVER () AS returned FROM ("
        f"SELECT rowid, {_BM25} AS score FROM message_parts_fts "
        "WHERE message_parts_fts MATCH ? ORDER BY score LIMIT ?)) f "
        "JOIN message_parts p ON p.rowid = f.rowid "
        "JOIN messages m ON m.id = p.message_id "
        f"WHERE m.is_summary = 0 {clauses} ORDER BY f.score LIMIT ? OFFSET ?"
    )
    head = [where.under_summary] if where.under_summary else []
    rows = conn.execute(sql, [*head, match, candidates, *args, limit, offset]).fetchall()
    returned = rows[0][-1] if rows else candidates
    if len(rows) < limit and len(rows) + offset < returned:
        # The filters rejected some of the index's candidates, maybe the best ones:
        # rank every match.
        rows = conn.execute(sql, [*head, match, -1, *args, limit, offset]).fetchall()
    return rows


def _own_text_match(group: SearchQuery, sessions: str) -> str | None:
    """The match expression of a group's own-text matches (see ``group_limit``)."""
    own, speaker_date = group.own_text_terms()
    if not group.include_context or group.context_only or not own:
        return None
    expression = f"{{text_content tool_content}} : ({render_fts5(SearchQuery(all_of=own))})"
    if speaker_date:
        expression += f" AND ({render_fts5(SearchQuery(all_of=speaker_date))})"
    return f"{sessions}({expression})"


def _rows_searched(conn: sqlite3.Connection, where: SearchFilter) -> int:
    """About how many parts a search reads (the rowid span of its sessions' parts)."""
    ids = where.session_ids
    if ids is None or len(ids) > 50:
        return int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM message_parts").fetchone()[0])
    total = 0
    for sid in ids:
        low, high = conn.execute(
            "SELECT (SELECT MIN(rowid) FROM message_parts WHERE session_id = ?), "
            "(SELECT MAX(rowid) FROM message_parts WHERE session_id = ?)",
            (sid, sid),
        ).fetchone()
        total += 0 if low is None else high - low + 1
    return total


def _keys_sql(scope: str, clauses: str, under_summary: bool) -> str:
    """The rows of the given rowids that pass the filters, in the given order."""
    if scope == "summaries":
        return (
            "SELECT s.rowid, NULL, s.id, s.session_id, s.content, NULL, s.created_at, 0.0, "
            "NULL, NULL FROM json_each(?) j JOIN summaries s ON s.rowid = j.value "
            f"WHERE 1 = 1 {clauses} ORDER BY j.key LIMIT ? OFFSET ?"
        )
    return (
        f"{DOWN_CTE if under_summary else ''} "
        "SELECT p.rowid, p.id, p.message_id, p.session_id, p.text_content, m.role, "
        "m.created_at, 0.0, p.tool_name, p.part_type FROM json_each(?) j "
        "JOIN message_parts p ON p.rowid = j.value JOIN messages m ON m.id = p.message_id "
        f"WHERE m.is_summary = 0 {clauses} ORDER BY j.key LIMIT ? OFFSET ?"
    )


_OTHER_SESSIONS_CHECKED = 64
"""Other sessions probed for rows before a search assumes some of them hold rows."""


def _sessions_hold_everything(
    conn: sqlite3.Connection, scope: str, session_ids: Sequence[str]
) -> bool:
    """True when no other session has rows in ``scope``: a session filter would keep
    every match, and intersecting with the session's posting list (all of the index)
    costs more than the search itself."""
    others = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM sessions WHERE id NOT IN (SELECT value FROM json_each(?)) LIMIT ?",
            (dumps(list(session_ids)), _OTHER_SESSIONS_CHECKED + 1),
        )
    ]
    if len(others) > _OTHER_SESSIONS_CHECKED:
        return False
    table = "message_parts" if scope == "messages" else "summaries"
    row = conn.execute(
        f"SELECT EXISTS (SELECT 1 FROM json_each(?) o JOIN {table} t ON t.session_id = o.value)",
        (dumps(others),),
    ).fetchone()
    return not row[0]


def _sessions_are_a_small_share(conn: sqlite3.Connection, session_ids: Sequence[str]) -> bool:
    """True when the sessions hold under a quarter of all stored messages."""
    if len(session_ids) > 50:
        return False
    total = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM messages").fetchone()[0])
    if total < FTS_SESSION_TOKEN_MIN_MESSAGES:
        return False
    mine = 0
    for sid in session_ids:
        # One index probe per session (MAX over the (session_id, seq) index).
        row = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", (sid,)
        ).fetchone()
        mine += int(row[0])
    return mine * 4 < total


def _filter_sql(where: SearchFilter, scope: str) -> tuple[str, list[Any]]:
    """Time-range and lineage clauses (not the session filter) for a search."""
    clauses, args = range_and_lineage(where, scope)
    return " ".join(clauses), args


@functools.lru_cache(maxsize=1024)
def _fts5_term(term: Term) -> str:
    quoted = ['"' + " ".join(phrase).replace('"', '""') + '"' for phrase in term.alternatives]
    return quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")"


_FTS5 = QuerySyntax(" AND ", " OR ", " NOT ")


def render_fts5(query: SearchQuery) -> str:
    """The FTS5 ``MATCH`` expression of a query; every phrase is quoted, so no word can
    form an operator."""
    return render_query(query, _fts5_term, _FTS5)
