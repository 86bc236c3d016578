"""The candidates of a ``relevance`` search on PostgreSQL (see ``SearchQuery.relevance``).

As on SQLite: each ``any_of`` term's own-text rows are counted (at most
``TERM_COUNT_CAP`` per term), the combinations of terms are taken best first by the
sum of their weights, and each gives its newest ``group_limit`` matches in
conversation text (lexemes of weight A), then in tool input/output (weight D), until
enough candidates. ``tsquery`` has no "within n words" operator, so a combination
matches a tool input/output wherever its terms are (SQLite asks for them near each
other). Each combination's matches come from windows of the newest (oldest) rows
when those hold enough, else from one ``ORDER BY key + 0 DESC LIMIT`` over the GIN
index (see :mod:`~mnesis.store.postgres.newest`): the GIN index hands over every row
holding the words in text *or* context and each one's vector is read to check the
weights, so a combination of common words must not reach it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.store.base import SearchFilter
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.newest import DEFAULT_WINDOWS, WINDOW_TSV, Condition, Finder
from mnesis.store.postgres.rows import fetch_one
from mnesis.store.postgres.search_sql import (
    PART_TSV,
    render_tsquery,
    render_weighted,
)
from mnesis.store.search_query import TERM_COUNT_CAP, SearchQuery, Term

__all__ = ["relevance_keys"]

_BATCH = 4
"""Groups answered before the pool is checked for enough candidates."""
_MATCH = "@@ to_tsquery('english', %s)"


async def relevance_keys(
    conn: Conn,
    query: SearchQuery,
    where: SearchFilter,
    enough: int,
    windows: Sequence[int] = DEFAULT_WINDOWS,
) -> list[int]:
    """The keys of a ``relevance`` query's candidates, best group first (no
    ``windows``: the GIN index answers every group)."""
    terms = query.any_of
    # Counted over text and context together, in the searched sessions only (a weight,
    # not a result): the GIN index answers without reading a vector.
    sessions, session_args = _sessions(where)
    counts_sql = ", ".join(
        f"(SELECT count(*) FROM (SELECT 1 FROM message_parts p WHERE {PART_TSV} {_MATCH}"
        f"{sessions} LIMIT {TERM_COUNT_CAP}) c)"
        for _ in terms
    )
    params: list[Any] = []
    for term in terms:
        params += [render_tsquery(SearchQuery(all_of=(term,))), *session_args]
    row = await fetch_one(conn, f"SELECT {counts_sql}", params)
    assert row is not None
    counts = [int(c) for c in row]
    total = await _rows_searched(conn, where)
    groups = [
        _conditions((*query.all_of, *group)) for group in query.relevance_groups(counts, total)
    ]
    limit = query.group_limit or enough
    # Each condition's newest matches come from windows of the newest rows when they
    # hold enough (a common word's own-text matches: the GIN index would hand over
    # every row holding the words in text or context, each vector read to check its
    # weights), from the GIN index otherwise (rare words: few rows to check).
    finder = Finder(conn, "messages", where, windows)
    for conditions in groups:
        for condition in conditions:
            finder.plan("DESC", condition, limit + 1)
            finder.plan("ASC", condition, max(1, limit // 2))
    keys: dict[int, None] = {}
    for start in range(0, len(groups), _BATCH):
        # Group by group (its newest matches, then its oldest), best group first.
        for conditions in groups[start : start + _BATCH]:
            for condition in conditions:
                found = await finder.first("DESC", condition, limit + 1)
                if len(found) > limit:
                    found = found[:limit] + await finder.first("ASC", condition, max(1, limit // 2))
                keys.update(dict.fromkeys(found))
        if len(keys) >= enough:
            break
    return list(keys)


def _sessions(where: SearchFilter) -> tuple[str, list[Any]]:
    ids = where.session_ids
    if ids is None:
        return "", []
    return " AND p.session_id = ANY(%s)", [list(ids)]


def _conditions(terms: tuple[Term, ...]) -> list[Condition]:
    """A group's conditions: in conversation text (with its speaker/date terms in the
    context), then in tool input/output."""
    own, speaker_date = SearchQuery(all_of=terms).own_text_terms()
    everything = render_tsquery(SearchQuery(all_of=terms))
    if not own:
        return [_condition(f"{PART_TSV} {_MATCH} AND p.context_tsv {_MATCH}", [everything] * 2)]
    text = f"{PART_TSV} {_MATCH} AND p.search_tsv {_MATCH}"
    text_args = [everything, render_weighted(own, "A")]
    if speaker_date:
        text += f" AND p.context_tsv {_MATCH}"
        text_args.append(render_tsquery(SearchQuery(all_of=speaker_date)))
    own_query = render_tsquery(SearchQuery(all_of=own))
    tool = f"{PART_TSV} {_MATCH} AND p.search_tsv {_MATCH}"
    return [
        _condition(text, text_args),
        _condition(tool, [own_query, render_weighted(own, "D")]),
    ]


def _condition(sql: str, args: list[str]) -> Condition:
    """A condition over the table (its GIN index) and over a window's rows."""
    return Condition((sql, args), (sql.replace(PART_TSV, WINDOW_TSV), args))


async def _rows_searched(conn: Conn, where: SearchFilter) -> int:
    """About how many parts a search reads (the key span of its sessions' parts)."""
    ids = where.session_ids
    if ids is None or len(ids) > 50:
        row = await fetch_one(conn, "SELECT COALESCE(MAX(key), 0) FROM message_parts")
        return int(row[0]) if row else 0
    total = 0
    for sid in ids:
        row = await fetch_one(
            conn,
            "SELECT (SELECT MIN(key) FROM message_parts WHERE session_id = %s), "
            "(SELECT MAX(key) FROM message_parts WHERE session_id = %s)",
            [sid, sid],
        )
        if row is not None and row[0] is not None:
            total += int(row[1]) - int(row[0]) + 1
    return total
