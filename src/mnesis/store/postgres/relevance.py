"""The candidates of a ``relevance`` search on PostgreSQL (see ``SearchQuery.relevance``).

As on SQLite: each ``any_of`` term's own-text rows are counted (at most
``TERM_COUNT_CAP`` per term), the combinations of terms are taken best first by the
sum of their weights, and each gives its matches in conversation text (lexemes of
weight A), then in tool input/output (weight D): all of them, newest first, when few
rows hold its terms (at most ``2 * group_limit``), else the newest ``group_limit`` of
each part and, when it has more, the oldest ``group_limit // 2``; until enough
candidates. ``tsquery`` has no "within n words" operator, so a combination matches a
tool input/output wherever its terms are (SQLite asks for them near each other).

A statement per ``_BATCH`` combinations reads, for each one, the rows the GIN index
hands over for its terms (in text *or* context: the index holds both), at most
``CANDIDATES`` of them, and sorts those matching in text or tool input/output: a
combination that fewer rows hold is answered there, exactly, in one round trip. A
combination of words common in text or context would make the GIN index hand over
(and each vector be read for) most rows: its parts' matches come from windows of the
newest (oldest) rows instead, the GIN index only for what those do not prove (see
:mod:`~mnesis.store.postgres.newest`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mnesis.store.base import SearchFilter
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.newest import DEFAULT_WINDOWS, WINDOW_TSV, Condition, Finder
from mnesis.store.postgres.rows import DOWN_CTE, fetch, fetch_one
from mnesis.store.postgres.search_sql import (
    PART_TSV,
    filter_sql,
    render_tsquery,
    render_weighted,
)
from mnesis.store.search_query import TERM_COUNT_CAP, SearchQuery, Term

__all__ = ["CANDIDATES", "relevance_keys"]

CANDIDATES = 512
"""GIN index rows a combination reads (its terms in text or context) before its
matches are left to the windows."""
_BATCH = 8
"""Combinations asked per statement before the pool is checked for enough candidates."""
_MATCH = "@@ to_tsquery('english', %s)"
_PARTS = 2
_MESSAGE = "SELECT m.is_summary, m.created_at FROM messages m WHERE m.id = p.message_id OFFSET 0"
"""A candidate's message, looked up by its key (``OFFSET 0``: never joined by a scan of
every message, as the planner would for a few hundred candidates)."""
"""Most parts of a group (text, tool input/output)."""


@dataclass(frozen=True, slots=True, eq=False)
class _Group:
    """A combination: the GIN condition of its terms and its parts (text, tool)."""

    everything: str
    """Its terms, as ``tsquery`` text (the GIN index's condition)."""
    parts: list[tuple[str, str, list[str]]]
    """Each part's GIN ``tsquery`` text, its own condition on ``p`` and its parameters."""

    @property
    def enumerable(self) -> bool:
        """Whether every part's GIN condition is the group's (no speaker/date terms)."""
        return all(gin == self.everything for gin, _, _ in self.parts)

    def conditions(self) -> list[Condition]:
        """The parts as conditions of the windows' walk (see ``newest.Finder``)."""
        out = []
        for gin, sql, args in self.parts:
            table = f"{PART_TSV} {_MATCH} AND {sql}"
            window = table.replace(PART_TSV, WINDOW_TSV)
            out.append(Condition((table, [gin, *args]), (window, [gin, *args])))
        return out


async def relevance_keys(
    conn: Conn,
    query: SearchQuery,
    where: SearchFilter,
    enough: int,
    windows: Sequence[int] = DEFAULT_WINDOWS,
) -> list[int]:
    """The keys of a ``relevance`` query's candidates, best group first (no
    ``windows``: the GIN index answers every crowded group)."""
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
    groups = [_group((*query.all_of, *g)) for g in query.relevance_groups(counts, total)]
    limit = query.group_limit or enough
    keys: dict[int, None] = {}
    for start in range(0, len(groups), _BATCH):
        batch = groups[start : start + _BATCH]
        enumerable = [g for g in batch if g.enumerable]
        answers = dict(zip(enumerable, await _enumerated(conn, enumerable, where), strict=True))
        found = [answers.get(g) for g in batch]
        # The batch's crowded groups share the windows (each read once per direction).
        finder = Finder(conn, "messages", where, windows)
        for group, parts in zip(batch, found, strict=True):
            if parts is None:
                for condition in group.conditions():
                    finder.plan("DESC", condition, limit + 1)
                    finder.plan("ASC", condition, max(1, limit // 2))
        # Group by group (its newest matches, then its oldest), best group first.
        for group, parts in zip(batch, found, strict=True):
            if parts is not None:
                keys.update(dict.fromkeys(_chosen(parts, limit)))
                continue
            for condition in group.conditions():
                newest = await finder.first("DESC", condition, limit + 1)
                if len(newest) > limit:
                    newest = newest[:limit] + await finder.first(
                        "ASC", condition, max(1, limit // 2)
                    )
                keys.update(dict.fromkeys(newest))
        if len(keys) >= enough:
            break
    return list(keys)


def _chosen(parts: list[list[int]], limit: int) -> list[int]:
    """A group's keys from every match of each part (ascending): all of them, newest
    first, when there are at most ``2 * limit``; else, per part, the newest ``limit``
    and, when it has more, the oldest ``limit // 2``."""
    every = sorted({k for keys in parts for k in keys}, reverse=True)
    if len(every) <= 2 * limit:
        return every
    out: list[int] = []
    for keys in parts:
        newest = keys[::-1][:limit]
        out += newest + (keys[: max(1, limit // 2)] if len(keys) > limit else [])
    return out


async def _enumerated(
    conn: Conn, batch: list[_Group], where: SearchFilter
) -> list[list[list[int]] | None]:
    """For each group, every match of each of its parts (keys ascending), read from
    the rows the GIN index hands over for its terms; None when those are more than
    ``CANDIDATES``. One statement."""
    if not batch:
        return []
    clauses, args = filter_sql(where, "messages")
    lineage = where.under_summary is not None
    params: list[Any] = [where.under_summary] if lineage else []
    selects = []
    for index, group in enumerate(batch):
        aggregates = [
            f"array_agg(c.key ORDER BY c.key) FILTER (WHERE c.part{i})"
            for i in range(len(group.parts))
        ]
        aggregates += ["NULL::bigint[]"] * (_PARTS - len(aggregates))
        flags = ", ".join(f"{sql} AS part{i}" for i, (_, sql, _) in enumerate(group.parts))
        for _, _, part_args in group.parts:
            params += part_args
        params += [group.everything, *args, CANDIDATES + 1]
        selects.append(
            f"SELECT {index}, count(*), {', '.join(aggregates)} FROM ("
            f"SELECT p.key, {flags} FROM message_parts p CROSS JOIN LATERAL ({_MESSAGE}) m "
            f"WHERE {PART_TSV} {_MATCH} AND NOT m.is_summary {clauses} LIMIT %s) c"
        )
    sql = f"{DOWN_CTE if lineage else ''} " + " UNION ALL ".join(selects)
    out: list[list[list[int]] | None] = [None] * len(batch)
    for index, candidates, *parts in await fetch(conn, sql, params):
        if candidates <= CANDIDATES:
            out[index] = [list(p or []) for p in parts[: len(batch[index].parts)]]
    return out


def _sessions(where: SearchFilter) -> tuple[str, list[Any]]:
    ids = where.session_ids
    if ids is None:
        return "", []
    return " AND p.session_id = ANY(%s)", [list(ids)]


def _group(terms: tuple[Term, ...]) -> _Group:
    """A group's parts: in conversation text (with its speaker/date terms in the
    context), then in tool input/output (its other terms)."""
    own, speaker_date = SearchQuery(all_of=terms).own_text_terms()
    everything = render_tsquery(SearchQuery(all_of=terms))
    if not own:
        return _Group(everything, [(everything, f"p.context_tsv {_MATCH}", [everything])])
    text = f"p.search_tsv {_MATCH}"
    text_args = [render_weighted(own, "A")]
    if speaker_date:
        text += f" AND p.context_tsv {_MATCH}"
        text_args.append(render_tsquery(SearchQuery(all_of=speaker_date)))
    tool = f"p.search_tsv {_MATCH}", [render_weighted(own, "D")]
    return _Group(
        everything,
        [(everything, text, text_args), (render_tsquery(SearchQuery(all_of=own)), *tool)],
    )


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
