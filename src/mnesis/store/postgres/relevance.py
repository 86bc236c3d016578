"""The candidates of a ``relevance`` search on PostgreSQL (see ``SearchQuery.relevance``).

As on SQLite: each ``any_of`` term's rows are counted (at most
``TERM_COUNT_CAP`` per term), the combinations of terms are taken best first by the
sum of their weights, and each gives its matches in conversation text (lexemes of
weight A), then in tool input/output (weight D): all of them, newest first, when few
rows hold its terms (at most ``2 * group_limit``), else the newest ``group_limit`` of
each part and, when it has more, the oldest ``group_limit // 2``; until enough
candidates. ``tsquery`` has no "within n words" operator, so a combination matches a
tool input/output wherever its terms are (SQLite asks for them near each other).

Each part of a combination is asked through the GIN index of parts' own text (m013:
one for conversation parts, one for tool parts), never the index that also holds the
neighbour context, where words common in a session match three times the rows. A
statement per ``_BATCH`` combinations reads, for each part, at most ``CANDIDATES + 1``
of the rows its index hands over (one subquery per kind of part, planned once): a
part with no more is answered there, exactly. A crowded part (more) takes its newest
matches from the windows of newest rows (see :mod:`~mnesis.store.postgres.newest`),
read once for the batch, and its oldest from the rows it read (the index hands them
over in table order: an append-only table's oldest first). When the windows hold
fewer than ``group_limit`` of its matches, the rest are the newest of the rows it
read: the cap bounds the work, not the answer's exactness (bounded, as issue 28 asks:
no walk of every match of a common combination).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnesis.store.base import SearchFilter
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.newest import DEFAULT_WINDOWS, WINDOW_TSV, Condition, Finder
from mnesis.store.postgres.rows import DOWN_CTE, fetch
from mnesis.store.postgres.search_sql import NOT_SUMMARY, PART_TSV, filter_sql, render_tsquery
from mnesis.store.postgres.term_counts import TermCounts
from mnesis.store.search_query import SearchQuery, Term

__all__ = ["CANDIDATES", "relevance_keys"]

CANDIDATES = 512
"""Rows a part of a combination reads (its terms in that part's own text): a part
with more is crowded, its newest matches come from the windows of newest rows."""
_BATCH = 8
"""Combinations asked per statement before the pool is checked for enough candidates."""
_MATCH = "@@ to_tsquery('english', %s)"
_TEXT = "p.part_type <> 'tool'"
_TOOL = "p.part_type = 'tool'"
"""The predicates of the own-text GIN indexes (m013): conversation parts, tool parts."""


_KINDS = {
    "text": f"{_TEXT} AND p.search_tsv {_MATCH} AND p.context_tsv {_MATCH}",
    "tool": f"{_TOOL} AND p.search_tsv {_MATCH}",
    "context": f"{PART_TSV} {_MATCH} AND p.context_tsv {_MATCH}",
}
"""Each kind of part's condition on ``p``: its words, in conversation text (and its
speaker/date words in the context), in tool input/output, or in the context."""


@dataclass(frozen=True, slots=True, eq=False)
class _Part:
    """One part of a combination: its kind (see ``_KINDS``) and ``tsquery`` texts."""

    kind: str
    words: str
    context: str | None = None
    """Conversation text: the speaker/date words its context must hold (None: any)."""
    condition: Condition = field(init=False)
    """Over the table and over the windows' rows (compared by identity)."""

    def __post_init__(self) -> None:
        sql = _KINDS[self.kind]
        if self.kind == "text" and self.context is None:
            sql = sql.removesuffix(f" AND p.context_tsv {_MATCH}")
        args = [self.words] * sql.count("%s")
        if self.context is not None:
            args[-1] = self.context
        window = sql.replace(PART_TSV, WINDOW_TSV)
        object.__setattr__(self, "condition", Condition((sql, args), (window, args)))


@dataclass(frozen=True, slots=True)
class _Ends:
    """What a part's statement read: up to ``CANDIDATES + 1`` of its matches."""

    found: int
    newest: list[int]
    """The newest ``2 * limit`` of those, newest first (all of them when fewer)."""
    oldest: list[int]
    """The oldest ``limit // 2`` of those (at least one)."""

    @property
    def crowded(self) -> bool:
        """More matches than ``CANDIDATES``: not every match was read."""
        return self.found > CANDIDATES

    def part_keys(self, limit: int) -> list[int]:
        """The newest ``limit`` and, when it has more, the oldest ``limit // 2``."""
        return self.newest[:limit] + (self.oldest if self.found > limit else [])


async def relevance_keys(
    conn: Conn,
    query: SearchQuery,
    where: SearchFilter,
    enough: int,
    term_counts: TermCounts,
    windows: Sequence[int] = DEFAULT_WINDOWS,
) -> list[int]:
    """The keys of a ``relevance`` query's candidates, best group first (no
    ``windows``: a crowded part's newest matches are those its rows read hold);
    ``term_counts``: the store's (see :mod:`~mnesis.store.postgres.term_counts`)."""
    counts, total = await term_counts.counts(conn, query.any_of, where)
    groups = [_parts((*query.all_of, *g)) for g in query.relevance_groups(counts, total)]
    limit = query.group_limit or enough
    keys: dict[int, None] = {}
    for start in range(0, len(groups), _BATCH):
        batch = groups[start : start + _BATCH]
        parts = [part for group in batch for part in group]
        read = dict(zip(parts, await _enumerated(conn, parts, where, limit), strict=True))
        # The batch's crowded parts share the windows (each read once).
        finder = Finder(conn, "messages", where, windows)
        for part in parts:
            if read[part].crowded:
                finder.plan("DESC", part.condition, limit)
        for group in batch:
            ends = [read[part] for part in group]
            if not any(e.crowded for e in ends):
                keys.update(dict.fromkeys(_chosen(ends, limit)))
                continue
            # More than ``CANDIDATES`` matches in a part, more than twice the limit in
            # all: each part gives its newest and its oldest.
            for part, end in zip(group, ends, strict=True):
                if not end.crowded:
                    keys.update(dict.fromkeys(end.part_keys(limit)))
                    continue
                newest = await finder.from_windows("DESC", part.condition, limit)
                if newest is None:
                    # The windows hold fewer, the newest; then the newest of the rows
                    # read (the cap: the index hands them over in table order, about
                    # the oldest first).
                    seen = finder.seen("DESC", part.condition)
                    newest = sorted({*seen, *end.newest}, reverse=True)[:limit]
                keys.update(dict.fromkeys([*newest, *end.oldest]))
        if len(keys) >= enough:
            break
    return list(keys)


def _chosen(ends: list[_Ends], limit: int) -> list[int]:
    """A group's keys from every match of each part: all of them, newest first, when
    there are at most ``2 * limit``; else each part's newest ``limit`` and, when it
    has more, its oldest ``limit // 2``."""
    if all(e.found <= 2 * limit for e in ends):
        every = sorted({k for e in ends for k in e.newest}, reverse=True)
        if len(every) <= 2 * limit:
            return every
    return [k for e in ends for k in e.part_keys(limit)]


async def _enumerated(
    conn: Conn, parts: list[_Part], where: SearchFilter, limit: int
) -> list[_Ends]:
    """For each part, its newest and oldest matches among the first ``CANDIDATES + 1``
    rows its GIN index hands over (all of its matches when it has no more). One
    statement, a subquery per kind of part (planned once, run for each of its parts)."""
    if not parts:
        return []
    clauses, args = filter_sql(where, "messages")
    lineage = where.under_summary is not None
    params: list[Any] = [where.under_summary] if lineage else []
    timed = where.since is not None or where.until is not None
    join = " JOIN messages m ON m.id = p.message_id" if timed else ""
    own = "NOT m.is_summary" if timed else NOT_SUMMARY
    selects = []
    for kind, condition in _KINDS.items():
        mine = [(i, part) for i, part in enumerate(parts) if part.kind == kind]
        if not mine:
            continue
        if kind == "text":
            condition = condition.replace(
                f"p.context_tsv {_MATCH}",
                "(v.c IS NULL OR p.context_tsv @@ to_tsquery('english', v.c))",
            )
        condition = condition.replace("%s", "v.q")
        rows = ", ".join("(%s::int, %s::text, %s::text)" for _ in mine)
        params += [x for i, part in mine for x in (i, part.words, part.context)]
        params += [2 * limit, max(1, limit // 2), *args, CANDIDATES + 1]
        selects.append(
            f"SELECT v.i, c.* FROM (VALUES {rows}) v(i, q, c) CROSS JOIN LATERAL ("
            "SELECT count(*), (array_agg(s.key ORDER BY s.key DESC))[1:%s], "
            "(array_agg(s.key ORDER BY s.key))[1:%s] FROM ("
            f"SELECT p.key FROM message_parts p{join} WHERE {condition} AND {own} {clauses} "
            "LIMIT %s) s) c"
        )
    sql = f"{DOWN_CTE if lineage else ''} " + " UNION ALL ".join(selects)
    out: list[_Ends | None] = [None] * len(parts)
    for index, found, newest, oldest in await fetch(conn, sql, params):
        out[index] = _Ends(found, list(newest or []), list(oldest or []))
    return [e for e in out if e is not None]


def _parts(terms: tuple[Term, ...]) -> list[_Part]:
    """A group's parts: its own-text terms in conversation text (with its speaker/date
    terms in the context), then in tool input/output; a group of speaker/date terms
    only matches in the context. Each part's rows come from its own GIN index."""
    own, speaker_date = SearchQuery(all_of=terms).own_text_terms()
    if not own:
        return [_Part("context", render_tsquery(SearchQuery(all_of=terms)))]
    words = render_tsquery(SearchQuery(all_of=own))
    context = render_tsquery(SearchQuery(all_of=speaker_date)) if speaker_date else None
    return [_Part("text", words, context), _Part("tool", words)]
