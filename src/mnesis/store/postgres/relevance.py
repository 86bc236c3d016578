"""The candidates of a ``relevance`` search on PostgreSQL (see ``SearchQuery.relevance``).

As on SQLite: each ``any_of`` term's own-text rows are counted (at most
``TERM_COUNT_CAP`` per term), the combinations of terms are taken best first by the
sum of their weights, and each gives its newest ``group_limit`` matches in
conversation text (lexemes of weight A), then in tool input/output (weight D), until
enough candidates. ``tsquery`` has no "within n words" operator, so a combination
matches a tool input/output wherever its terms are (SQLite asks for them near each
other). Each subquery is one ``ORDER BY key + 0 DESC LIMIT`` over the GIN index.
"""

from __future__ import annotations

from typing import Any

from mnesis.store.base import SearchFilter
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import DOWN_CTE, fetch, fetch_one
from mnesis.store.postgres.search_sql import (
    PART_TSV,
    filter_sql,
    render_tsquery,
    render_weighted,
)
from mnesis.store.search_query import TERM_COUNT_CAP, SearchQuery, Term

__all__ = ["relevance_keys"]

_BATCH = 4
"""Groups asked per statement."""
_MATCH = "@@ to_tsquery('english', %s)"


class _Plan:
    """The SQL pieces every subquery of one search shares."""

    def __init__(self, where: SearchFilter) -> None:
        self.clauses, self.args = filter_sql(where, "messages")
        lineage = where.under_summary is not None
        self.head: list[Any] = [where.under_summary] if lineage else []
        self.cte = DOWN_CTE if lineage else ""

    def matches(self, condition: str, limit: int, direction: str = "DESC") -> str:
        return (
            "(SELECT p.key FROM message_parts p JOIN messages m ON m.id = p.message_id "
            f"WHERE {condition} AND NOT m.is_summary {self.clauses} "
            f"ORDER BY p.key + 0 {direction} LIMIT {int(limit)})"
        )


async def relevance_keys(
    conn: Conn, query: SearchQuery, where: SearchFilter, enough: int
) -> list[int]:
    """The keys of a ``relevance`` query's candidates, best group first."""
    plan = _Plan(where)
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
    groups = query.relevance_groups(counts, total)
    limit = query.group_limit or enough
    keys: dict[int, None] = {}
    for start in range(0, len(groups), _BATCH):
        conditions = [
            c
            for group in groups[start : start + _BATCH]
            for c in _conditions((*query.all_of, *group))
        ]
        newest = await _limited(conn, plan, conditions, "DESC", limit + 1)
        crowded = [i for i, found in enumerate(newest) if len(found) > limit]
        oldest = await _limited(
            conn, plan, [conditions[i] for i in crowded], "ASC", max(1, limit // 2)
        )
        olds = dict(zip(crowded, oldest, strict=True))
        # Group by group (its newest matches, then its oldest), best group first.
        for index, found in enumerate(newest):
            keys.update(dict.fromkeys(found[:limit] + olds.get(index, [])))
        if len(keys) >= enough:
            break
    return list(keys)


async def _limited(
    conn: Conn, plan: _Plan, conditions: list[tuple[str, list[str]]], direction: str, limit: int
) -> list[list[int]]:
    """Each condition's first ``limit`` keys in ``direction``, in one statement."""
    if not conditions:
        return []
    parts = [
        f"SELECT {index} AS g, k.key FROM {plan.matches(c, limit, direction)} k"
        for index, (c, _) in enumerate(conditions)
    ]
    args = [a for _, condition_args in conditions for a in (*condition_args, *plan.args)]
    out: list[list[int]] = [[] for _ in conditions]
    sql = f"{plan.cte} SELECT g, key FROM ({' UNION ALL '.join(parts)}) u"
    for index, key in await fetch(conn, sql, [*plan.head, *args]):
        out[index].append(key)
    for keys in out:
        keys.sort(reverse=direction == "DESC")
    return out


def _sessions(where: SearchFilter) -> tuple[str, list[Any]]:
    ids = where.session_ids
    if ids is None:
        return "", []
    return " AND p.session_id = ANY(%s)", [list(ids)]


def _conditions(terms: tuple[Term, ...]) -> list[tuple[str, list[str]]]:
    """A group's conditions: in conversation text (with its speaker/date terms in the
    context), then in tool input/output."""
    own, speaker_date = SearchQuery(all_of=terms).own_text_terms()
    everything = render_tsquery(SearchQuery(all_of=terms))
    if not own:
        return [(f"{PART_TSV} {_MATCH} AND p.context_tsv {_MATCH}", [everything, everything])]
    text = f"{PART_TSV} {_MATCH} AND p.search_tsv {_MATCH}"
    text_args = [everything, render_weighted(own, "A")]
    if speaker_date:
        text += f" AND p.context_tsv {_MATCH}"
        text_args.append(render_tsquery(SearchQuery(all_of=speaker_date)))
    own_query = render_tsquery(SearchQuery(all_of=own))
    tool = f"{PART_TSV} {_MATCH} AND p.search_tsv {_MATCH}"
    return [(text, text_args), (tool, [own_query, render_weighted(own, "D")])]


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
