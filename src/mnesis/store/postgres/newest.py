"""The newest (and oldest) matches of each group of a ``group_limit`` search: windows
of the newest rows first, the GIN index when they hold too few.

A group's newest ``n`` matches are the newest ``n`` rows of the scope that match.
Asking the GIN index which rows match costs as much as there are matches (a common
word: most of a million rows); walking the key index newest first costs as many rows
as it takes to find ``n`` matches. One statement reads the newest ``size`` rows of
the table (of the session, when the search names one: an index walk either way, so
the other filters never make it read more) and collects, among those in the scope,
every group's matches. Every row of the scope outside the window is older than every
row inside, so when the window holds ``n`` matches of a group they are its newest
``n``; when the window is the whole table (or session) its matches are all there are.
Otherwise a larger window is read for the groups whose density in the first
promises ``n`` matches there and more than ``size`` in the whole table (the GIN
path's cost), and the rest (rare words) ask the GIN index. Which path answers
changes the cost, never the rows. The oldest matches are found the same way from the
oldest end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mnesis.store.base import SearchFilter
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import DOWN_CTE, fetch, fetch_one
from mnesis.store.postgres.search_sql import (
    NOT_SUMMARY,
    filter_sql,
    group_condition,
    own_text_condition,
)
from mnesis.store.search_query import GroupMatches, SearchQuery

__all__ = ["DEFAULT_WINDOWS", "WINDOW_TSV", "Condition", "Finder", "newest_group_keys"]

DEFAULT_WINDOWS = (256, 4096)
"""Sizes of the windows read before a group asks the GIN index, smallest first."""

_EVIDENCE = 4
"""Matches a window must hold before its density counts (see ``_Window.promising``)."""
_Direction = Literal["DESC", "ASC"]
WINDOW_TSV = "p.tsv_all"
"""The window's precomputed ``search_tsv || context_tsv`` (see ``PART_TSV``)."""


@dataclass(frozen=True, slots=True, eq=False)
class Condition:
    """One match condition, rendered over the table (GIN) and over the window (compared
    and hashed by identity)."""

    table: tuple[str, list[str]]
    window: tuple[str, list[str]]


def _conditions(group: SearchQuery, scope: str) -> tuple[Condition, Condition | None]:
    """A group's condition and (messages only) its own-text condition."""
    condition = Condition(group_condition(group, scope), group_condition(group, scope, WINDOW_TSV))
    if scope != "messages":
        return condition, None
    own = own_text_condition(group)
    own_window = own_text_condition(group, WINDOW_TSV)
    if own is None or own_window is None:
        return condition, None
    return condition, Condition(own, own_window)


@dataclass(frozen=True, slots=True)
class _Window:
    """The matches of some conditions among the first ``size`` rows of the walk."""

    size: int
    full: bool
    """The walk read ``size`` rows (else the window holds every row it could)."""
    keys: dict[Condition, list[int]]
    table_rows: float
    """The planner's estimate of the table's rows (``reltuples``; -1: never counted)."""

    def first(self, condition: Condition, n: int) -> list[int] | None:
        """The first ``n`` matches of ``condition``, when the window proves them."""
        keys = self.keys.get(condition)
        if keys is None or (len(keys) < n and self.full):
            return None
        return keys[:n]

    def promising(self, condition: Condition, n: int, size: int) -> bool:
        """This window holds a few matches (one mention of a rare word reaches a few
        rows through their neighbour context), at a density that promises twice ``n``
        in a window of ``size`` rows and more than ``size`` in the whole table (the
        rows the GIN path would read)."""
        keys = self.keys.get(condition)
        if keys is None or len(keys) < _EVIDENCE:
            return False
        found = len(keys)
        return found * size >= 2 * n * self.size and found * self.table_rows > size * self.size


class Finder:
    """The first ``n`` matches of a condition in key order, from the windows (each
    read once, for every condition planned and still unanswered) or the GIN index."""

    def __init__(
        self,
        conn: Conn,
        scope: Literal["messages", "summaries"],
        where: SearchFilter,
        windows: Sequence[int],
    ) -> None:
        self.conn = conn
        self.windows = [w for w in windows if w > 0]
        self.clauses, self.args = filter_sql(where, scope)
        # Summaries under a summary: the filter is ``AND 1 = 0``, no lineage CTE.
        lineage = where.under_summary is not None and scope == "messages"
        self.head: list[Any] = [where.under_summary] if lineage else []
        self.cte = DOWN_CTE if lineage else ""
        # The walk takes only the filter an index walks in key order (one session), so
        # it reads ``size`` rows however few of them the other filters keep.
        ids = where.session_ids
        one = ids is not None and len(ids) == 1
        self.walk_args: list[Any] = [ids[0]] if ids is not None and one else []
        if scope == "messages":
            self.key = "p.key"
            # A time range is on the message's creation time: the message is read.
            timed = where.since is not None or where.until is not None
            join = " JOIN messages m ON m.id = p.message_id" if timed else ""
            own = "NOT m.is_summary" if timed else NOT_SUMMARY
            self.matched = f"FROM message_parts p{join} WHERE "
            self.tail = f"AND {own} {self.clauses}"
            self.walk = (
                "SELECT p.key, p.message_id, p.session_id, p.part_type, p.search_tsv, "
                f"p.context_tsv FROM message_parts p {'WHERE p.session_id = %s' if one else ''}"
            )
            self.rows = (
                "SELECT p.key, p.search_tsv, p.context_tsv, p.part_type, "
                "p.search_tsv || p.context_tsv AS tsv_all, "
                f"({own} {self.clauses}) AS in_scope FROM ({{walk}}) p{join}"
            )
            self.alias = "p"
        else:
            self.key = "s.key"
            self.matched = "FROM summaries s WHERE "
            self.tail = self.clauses
            self.walk = (
                "SELECT s.key, s.session_id, s.created_at, s.search_tsv "
                f"FROM summaries s {'WHERE s.session_id = %s' if one else ''}"
            )
            self.rows = (
                f"SELECT s.key, s.search_tsv, (true {self.clauses}) AS in_scope FROM ({{walk}}) s"
            )
            self.alias = "s"
        self.table = "message_parts" if scope == "messages" else "summaries"
        self.planned: dict[_Direction, list[tuple[Condition, int]]] = {"DESC": [], "ASC": []}
        self.read: dict[_Direction, list[_Window]] = {"DESC": [], "ASC": []}

    def plan(self, direction: _Direction, condition: Condition, n: int) -> None:
        """Collect up to ``n`` matches of ``condition`` when a ``direction`` window is read."""
        self.planned[direction].append((condition, n))

    async def first(self, direction: _Direction, condition: Condition, n: int) -> list[int]:
        """The first ``n`` keys matching ``condition``, newest (``DESC``) or oldest first:
        from the smallest window that proves them; a larger window is read only when
        the previous one's density says it would hold ``n``; else the GIN index."""
        found = await self.from_windows(direction, condition, n)
        if found is not None:
            return found
        sql = (
            # "+ 0": the key's index must not give the order, or the planner walks it
            # and tests every row's vector until enough match (all rows when few do)
            # instead of asking the GIN index which rows match.
            f"{self.cte} SELECT {self.key} {self.matched}{condition.table[0]} {self.tail} "
            f"ORDER BY {self.key} + 0 {direction} LIMIT %s"
        )
        rows = await fetch(self.conn, sql, [*self.head, *condition.table[1], *self.args, n])
        return [r[0] for r in rows]

    async def from_windows(
        self, direction: _Direction, condition: Condition, n: int
    ) -> list[int] | None:
        """The first ``n`` matches of ``condition`` when a window proves them, else None
        (the windows read are kept: see ``seen``)."""
        read = self.read[direction]
        for i, size in enumerate(self.windows):
            if i == len(read):
                if i > 0 and not read[-1].promising(condition, n, size):
                    break
                await self._read_window(direction, size)
            found = read[i].first(condition, n)
            if found is not None:
                return found
            if not read[i].full:
                break
        return None

    def seen(self, direction: _Direction, condition: Condition) -> list[int]:
        """The matches of ``condition`` in the largest window read that looked for it
        (its first matches in key order, fewer than asked when no window proved them)."""
        for window in reversed(self.read[direction]):
            if condition in window.keys:
                return list(window.keys[condition])
        return []

    async def _read_window(self, direction: _Direction, size: int) -> None:
        """Read the next window: the conditions the previous windows left unanswered
        (those whose density there promises enough matches in this one)."""
        read = self.read[direction]
        planned = [
            (condition, n)
            for condition, n in self.planned[direction]
            if not read
            or (read[-1].first(condition, n) is None and read[-1].promising(condition, n, size))
        ]
        table_rows = (
            f"(SELECT reltuples FROM pg_class WHERE oid = '{self.table}'::regclass)"
            if not read
            else "NULL"
        )
        select: list[str] = ["count(*)", table_rows]
        params: list[Any] = [*self.head]
        alias = self.alias
        for condition, n in planned:
            where, args = condition.window
            select.append(
                f"(array_agg({alias}.key ORDER BY {alias}.key {direction}) "
                f"FILTER (WHERE {alias}.in_scope AND {where}))[1:%s::int]"
            )
            params += [*args, n]
        params += [*self.args, *self.walk_args, size]
        walk = f"{self.walk} ORDER BY {self.key} {direction} LIMIT %s"
        # "OFFSET 0" keeps the rows a subquery: each row's vectors are read (and
        # concatenated) once, not once per condition that names them.
        rows = self.rows.format(walk=walk)
        sql = f"{self.cte} SELECT {', '.join(select)} FROM ({rows} OFFSET 0) {alias}"
        row = await fetch_one(self.conn, sql, params)
        assert row is not None  # An aggregate without GROUP BY gives one row.
        conditions = [condition for condition, _ in planned]
        keys = {c: list(k or []) for c, k in zip(conditions, row[2:], strict=True)}
        estimate = float(row[1]) if not read else read[0].table_rows
        read.append(_Window(size, row[0] >= size, keys, estimate))


async def newest_group_keys(
    conn: Conn,
    query: SearchQuery,
    scope: Literal["messages", "summaries"],
    where: SearchFilter,
    wanted: int,
    windows: Sequence[int] = DEFAULT_WINDOWS,
) -> list[int]:
    """The keys of a ``newest_first`` query's matches, best first, as
    :class:`GroupMatches` orders them, until ``wanted`` are found (see
    ``SearchQuery.group_limit``; no ``windows``: the GIN index for every group)."""
    group_limit = query.group_limit or wanted
    finder = Finder(conn, scope, where, windows)
    levels = [[_conditions(g, scope) for g in groups] for groups in query.planned_groups()]
    for groups in levels:
        for condition, own_text in groups:
            finder.plan("DESC", condition, group_limit + 1)
            finder.plan("ASC", condition, max(1, group_limit // 2))
            if own_text is not None:
                finder.plan("DESC", own_text, group_limit)
    found = GroupMatches()
    for groups in levels:
        for condition, own_text in groups:
            newest = await finder.first("DESC", condition, group_limit + 1)
            own: list[int] = []
            oldest: list[int] = []
            if len(newest) > group_limit:
                if own_text is not None:
                    own = await finder.first("DESC", own_text, group_limit)
                oldest = await finder.first("ASC", condition, max(1, group_limit // 2))
            found.add_group(newest[:group_limit], own, oldest)
        if found.end_level() >= wanted:
            break
    return found.keys()
