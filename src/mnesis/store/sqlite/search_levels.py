"""The candidate search's walk over coordination levels, on SQLite's FTS5 index.

Each combination of terms of a level (see ``SearchQuery.levels``) gives its newest
matches; a crowded one also its oldest and its own-text matches. FTS5 stops an
``ORDER BY rowid LIMIT`` query at the limit, so a combination with many matches costs
little; one with few costs a walk over its terms' posting lists. Hence: a level's
combinations are asked in one statement, combinations holding a term no row holds
are not asked, and own-text matches (rare by nature) are asked once per fuller
combination.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from mnesis.store.search_query import GroupMatches, Term

__all__ = [
    "NEAR_TOKENS",
    "UNION_TERMS",
    "Group",
    "RelevanceGroup",
    "absent",
    "capped_counts",
    "newest_of_groups",
    "relevance_keys",
]


UNION_TERMS = 100
"""Most subqueries per statement (SQLite allows 500 terms in a compound ``SELECT``)."""
NEAR_TOKENS = 12
"""How close a combination's terms must be in a tool input/output (FTS5 ``NEAR``): a
long log holds every common word somewhere, the line that answers holds them together."""


def capped_counts(
    conn: sqlite3.Connection, table: str, expressions: list[str], cap: int
) -> list[int]:
    """How many rows match each FTS5 expression, counting at most ``cap`` (the index
    stops reading postings there); one statement per ``UNION_TERMS``."""
    counts = [0] * len(expressions)
    for start in range(0, len(expressions), UNION_TERMS):
        chunk = expressions[start : start + UNION_TERMS]
        sql = " UNION ALL ".join(
            f"SELECT {start + index}, (SELECT count(*) FROM (SELECT 1 FROM {table} "
            f"WHERE {table} MATCH ? LIMIT {int(cap)}))"
            for index in range(len(chunk))
        )
        for index, count in conn.execute(sql, chunk):
            counts[index] = count
    return counts


@dataclass(frozen=True, slots=True)
class RelevanceGroup:
    """One combination of terms of a ``relevance`` search, as the index is asked."""

    either: str | None
    """Its terms in a part's own text, conversation text or tool input/output alike
    (asked first: one walk of the terms' postings answers both when few rows match),
    or None when its parts must be asked apart (speaker/date terms)."""
    parts: tuple[str, ...]
    """Its matches in conversation text, then its terms near each other in a tool
    input/output (asked when ``either`` is crowded)."""


def relevance_keys(
    conn: sqlite3.Connection,
    table: str,
    groups: list[RelevanceGroup],
    group_limit: int,
    enough: int,
) -> list[int]:
    """The rowids of each group's matches, group by group in the order given, until
    ``enough`` rowids (up to three statements per ``_BATCH`` groups).

    A group whose terms few rows hold (at most ``2 * group_limit`` in text or tool
    input/output) gives them all, newest first, from one walk of the index. A crowded
    one gives, for each of its parts, the newest ``group_limit`` matches and, when it
    has more, the oldest ``group_limit // 2`` (where what later turns repeat was
    first said). Every walk goes oldest first and stops one row after its limit: a
    sparse group costs one pass over its terms' postings (a backward pass costs more),
    a crowded one stops early; only a crowded part is walked again, newest first.
    """
    keys: dict[int, None] = {}
    both = 2 * group_limit
    oldest = max(1, group_limit // 2)
    for start in range(0, len(groups), _BATCH):
        batch = groups[start : start + _BATCH]
        asked = [g for g in batch if g.either is not None]
        found = dict(
            zip(
                asked,
                _union_of_limited(conn, table, [(g.either or "", "ASC", both + 1) for g in asked]),
                strict=True,
            )
        )
        parts = [
            part for g in batch if g.either is None or len(found[g]) > both for part in g.parts
        ]
        first = _union_of_limited(conn, table, [(p, "ASC", group_limit + 1) for p in parts])
        crowded = [i for i, rows in enumerate(first) if len(rows) > group_limit]
        newest = dict(
            zip(
                crowded,
                _union_of_limited(conn, table, [(parts[i], "DESC", group_limit) for i in crowded]),
                strict=True,
            )
        )
        by_part = {
            part: newest[i] + rows[:oldest] if i in newest else rows[::-1]
            for i, (part, rows) in enumerate(zip(parts, first, strict=True))
        }
        for group in batch:
            rows = found.get(group)
            if rows is not None and len(rows) <= both:
                keys.update(dict.fromkeys(reversed(rows)))
                continue
            for part in group.parts:
                keys.update(dict.fromkeys(by_part[part]))
        if len(keys) >= enough:
            break
    return list(keys)


_BATCH = 4
"""Groups of a ``relevance`` search asked per statement."""


def absent(conn: sqlite3.Connection, table: str, expressions: list[str]) -> set[int]:
    """The indexes of the FTS5 expressions no row matches (one statement per
    ``UNION_TERMS``)."""
    present: set[int] = set()
    for start in range(0, len(expressions), UNION_TERMS):
        chunk = expressions[start : start + UNION_TERMS]
        sql = " UNION ALL ".join(
            f"SELECT {start + index} FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT 1)"
            for index in range(len(chunk))
        )
        present.update(r[0] for r in conn.execute(sql, chunk))
    return set(range(len(expressions))) - present


def _union_of_limited(
    conn: sqlite3.Connection, table: str, queries: list[tuple[str, str, int]]
) -> list[list[int]]:
    """Each ``(match, direction, limit)`` query's rowids, in one statement per
    ``UNION_TERMS`` queries."""
    out: list[list[int]] = [[] for _ in queries]
    for start in range(0, len(queries), UNION_TERMS):
        chunk = queries[start : start + UNION_TERMS]
        sql = " UNION ALL ".join(
            f"SELECT * FROM (SELECT {start + index}, rowid FROM {table} WHERE {table} MATCH ? "
            f"ORDER BY rowid {direction} LIMIT {count})"
            for index, (_, direction, count) in enumerate(chunk)
        )
        for index, rowid in conn.execute(sql, [match for match, _, _ in chunk]):
            out[index].append(rowid)
    return out


@dataclass(frozen=True, slots=True)
class Group:
    """One combination of terms of a coordination level, as the index is asked."""

    match: str
    own_text: str | None
    """The expression of its own-text matches, if it has one."""
    terms: frozenset[Term]


def newest_of_groups(
    conn: sqlite3.Connection,
    table: str,
    levels: Iterable[list[Group]],
    group_limit: int,
    enough: int,
) -> list[int]:
    """The rowids of each group's newest ``group_limit`` matches, level by level
    until ``enough``. A group with more matches also gives its oldest ones and, first,
    the newest of its own-text matches, unless a fuller group of an earlier level gave
    its own-text matches already (they are the subset's too, and finding few of them
    costs a scan of every match). One statement per level gives the newest matches,
    a second the crowded groups' other matches."""
    found = GroupMatches()
    owned: list[frozenset[Term]] = []
    for groups in levels:
        newest = _union_of_limited(
            conn, table, [(g.match, "DESC", group_limit + 1) for g in groups]
        )
        crowded = [i for i, rows in enumerate(newest) if len(rows) > group_limit]
        owners = [
            i
            for i in crowded
            if groups[i].own_text is not None and not any(groups[i].terms < s for s in owned)
        ]
        more = _union_of_limited(
            conn,
            table,
            [(groups[i].own_text or "", "DESC", group_limit) for i in owners]
            + [(groups[i].match, "ASC", max(1, group_limit // 2)) for i in crowded],
        )
        owned += [groups[i].terms for i in owners]
        own = dict(zip(owners, more[: len(owners)], strict=True))
        oldest = dict(zip(crowded, more[len(owners) :], strict=True))
        for index, rows in enumerate(newest):
            found.add_group(rows[:group_limit], own.get(index, []), oldest.get(index, []))
        if found.end_level() >= enough:
            break
    return found.keys()
