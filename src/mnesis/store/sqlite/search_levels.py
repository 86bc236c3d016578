"""The candidate search's walk over coordination levels, on SQLite's FTS5 index.

Each combination of terms of a level (see ``SearchQuery.levels``) gives its newest
matches; a crowded one also its oldest and its own-text matches. FTS5 stops an
``ORDER BY rowid LIMIT`` query at the limit, so a combination with many matches costs
little; one with few costs a walk over its terms' posting lists. Hence: a level's
combinations are asked in one statement, combinations holding a term no row holds
are not asked, and own-text matches (rare by nature) are asked once per fuller
combination. A ``relevance`` search reads its rare terms' and pairs' few matches
first and finds a combination holding one among them, without a walk
(:func:`relevance_keys`).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from mnesis.store.search_query import GroupMatches, Term
from mnesis.store.sqlite.search_rows import holding, near_matches, tool_parts

__all__ = [
    "KNOWN_ROWS",
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
    words: frozenset[str] = frozenset()
    """Its terms as FTS5 expressions (each a word or its alternative words), when
    ``either`` is given and no term is a phrase: the group is then ``either`` is these
    terms in a part's own text, ``parts`` these terms in conversation text, then near
    each other in a tool input/output, and its matches can be found among known rows
    term by term (see ``relevance_keys``)."""


KNOWN_ROWS = 128
"""Rows a pair of terms may match and still be read whole, up front. A larger
combination holding such a pair is then found among those rows, one index seek per
row and term, instead of by walking its terms' postings: common words that few rows
hold together cost a walk of every posting of theirs (~10-30 ms at 1M messages)."""

SEEKS_MIN = 32
"""Index seeks a combination may take to be checked among known rows, at least..."""
ROWS_PER_SEEK = 4_096
"""... or one per this many indexed parts (a walk costs more on a larger index)."""
PAIRED_WORDS = 7
"""Most distinct terms whose every pair is walked up front (21 walks)."""

_OWN = "{text_content tool_content}"


def relevance_keys(
    conn: sqlite3.Connection,
    table: str,
    groups: list[RelevanceGroup],
    group_limit: int,
    enough: int,
    sessions: str = "",
) -> list[int]:
    """The rowids of each group's matches, group by group in the order given, until
    ``enough`` rowids (``sessions``: the session filter every ``either`` starts with).

    A group whose terms few rows hold (at most ``2 * group_limit`` in text or tool
    input/output) gives them all, newest first. A crowded one gives, for each of its
    parts, the newest ``group_limit`` matches and, when it has more, the oldest
    ``group_limit // 2`` (where what later turns repeat was first said).

    How they are found: the single terms and pairs of terms asked (and, on a large
    index, every pair of the query's terms) are walked first, in one statement, each
    up to ``KNOWN_ROWS`` rows: those that few rows hold have all their matches
    known. A larger group holding some of them is found among their common rows, term
    by term (one index seek per row and term, within a budget growing with the
    index): its own matches and, when crowded, its parts' (conversation text or tool
    output by the row's type; a tool part's ``NEAR`` by a scratch index of those rows'
    text, see :mod:`~mnesis.store.sqlite.search_rows`). Any other group is walked:
    oldest first, stopping one row after its limit (a sparse group costs one pass over
    its terms' postings, a crowded one stops early); only a crowded part is walked
    again, newest first. Either way a group gives the same rows. Per ``_BATCH``
    groups: up to three walks, and seeks (at most ``KNOWN_ROWS`` per group and term).
    ``sessions`` must be the prefix the groups' expressions carry.
    """
    keys: dict[int, None] = {}
    both = 2 * group_limit
    oldest = max(1, group_limit // 2)
    # On a small index every walk is cheap: rows are known and checked by seeks in
    # proportion to its size (a walk's cost grows with it, a seek's hardly).
    (size,) = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM message_parts").fetchone()
    seeks = max(SEEKS_MIN, size // ROWS_PER_SEEK)
    whole = max(both, min(KNOWN_ROWS, seeks))
    walked, known = _first_rows(conn, table, groups, sessions, whole, seeks > both)
    for start in range(0, len(groups), _BATCH):
        batch = groups[start : start + _BATCH]
        found: dict[RelevanceGroup, list[int]] = {
            g: walked[g.words][: both + 1]
            for g in batch
            if g.either is not None and g.words in walked
        }
        pending = [g for g in batch if g.either is not None and g not in found]
        among = {
            g: superset
            for g in pending
            if (superset := _known_superset(known, g.words, seeks)) is not None
        }
        searched = list(among)
        found.update(
            zip(
                searched,
                holding(
                    conn,
                    table,
                    [(_OWN, sorted(g.words - held), rows) for g, (held, rows) in among.items()],
                ),
                strict=True,
            )
        )
        asked = [g for g in pending if g not in among]
        found.update(
            zip(
                asked,
                _union_of_limited(conn, table, [(g.either or "", "ASC", both + 1) for g in asked]),
                strict=True,
            )
        )
        for g, rows in found.items():
            if g.words and (g in searched or len(rows) <= both) and g.words not in known:
                known[g.words] = rows
        crowded_groups = [g for g in batch if g.either is None or len(found[g]) > both]
        # A crowded group whose matches are all known: its parts are found among them.
        from_known = [g for g in crowded_groups if g.words and g.words in known]
        tools = tool_parts(conn, sorted({r for g in from_known for r in known[g.words]}))
        by_part: dict[str, list[int]] = {}
        near: list[tuple[str, list[int]]] = []
        for group in from_known:
            text, tool = group.parts
            rows = known[group.words]
            by_part[text] = _newest_and_oldest(
                [r for r in rows if r not in tools], group_limit, oldest
            )
            near.append((tool, [r for r in rows if r in tools]))
        checked = near_matches(conn, near)
        parts: list[str] = []
        if checked is None:
            parts = [tool for tool, _ in near]
        else:
            for (tool, _), rows in zip(near, checked, strict=True):
                by_part[tool] = _newest_and_oldest(rows, group_limit, oldest)
        parts += [part for g in crowded_groups if g not in from_known for part in g.parts]
        first = _union_of_limited(conn, table, [(p, "ASC", group_limit + 1) for p in parts])
        crowded = [i for i, rows in enumerate(first) if len(rows) > group_limit]
        newest = dict(
            zip(
                crowded,
                _union_of_limited(conn, table, [(parts[i], "DESC", group_limit) for i in crowded]),
                strict=True,
            )
        )
        by_part.update(
            {
                part: newest[i] + rows[:oldest] if i in newest else rows[::-1]
                for i, (part, rows) in enumerate(zip(parts, first, strict=True))
            }
        )
        for group in batch:
            matched = found.get(group)
            if matched is not None and len(matched) <= both:
                keys.update(dict.fromkeys(reversed(matched)))
                continue
            for part in group.parts:
                keys.update(dict.fromkeys(by_part[part]))
        if len(keys) >= enough:
            break
    return list(keys)


def _first_rows(
    conn: sqlite3.Connection,
    table: str,
    groups: list[RelevanceGroup],
    sessions: str,
    whole: int,
    every_pair: bool,
) -> tuple[dict[frozenset[str], list[int]], dict[frozenset[str], list[int]]]:
    """The first ``whole + 1`` own-text matches (ascending) of each single term and
    pair of terms the groups ask for and, with ``every_pair``, of every pair of their
    terms when they have at most ``PAIRED_WORDS`` (one statement); and, of those, the
    ones whose matches are all known."""
    words = sorted(frozenset[str]().union(*(g.words for g in groups)))
    asked = [g.words for g in groups if g.either is not None and 1 <= len(g.words) <= 2]
    if every_pair and len(words) <= PAIRED_WORDS:
        asked += [frozenset(p) for p in itertools.combinations(words, 2)]
    probes = list(dict.fromkeys(asked))
    walked = dict(zip(probes, _walk_own(conn, table, sessions, probes, whole), strict=True))
    return walked, {p: rows for p, rows in walked.items() if len(rows) <= whole}


def _walk_own(
    conn: sqlite3.Connection, table: str, sessions: str, probes: list[frozenset[str]], whole: int
) -> list[list[int]]:
    """The first ``whole + 1`` rows (ascending) holding each probe's terms in own text."""
    return _union_of_limited(
        conn,
        table,
        [(f"{sessions}({_OWN} : ({' AND '.join(sorted(p))}))", "ASC", whole + 1) for p in probes],
    )


def _newest_and_oldest(rows: list[int], limit: int, oldest: int) -> list[int]:
    """What the walks give of a part whose matches (ascending) are all known."""
    return rows[::-1][:limit] + rows[:oldest] if len(rows) > limit else rows[::-1]


def _known_superset(
    known: dict[frozenset[str], list[int]], words: frozenset[str], seeks: int
) -> tuple[frozenset[str], list[int]] | None:
    """The rows every match of ``words`` is among, from the groups of fewer of its
    terms whose matches are all known (their intersection, ascending), with the
    terms those rows hold for sure; None when there is none or when checking the
    rows would take more than ``seeks`` index seeks."""
    if len(words) < 2:
        return None
    subsets = sorted(
        ((sub, rows) for sub, rows in known.items() if sub < words), key=lambda s: len(s[1])
    )
    if not subsets:
        return None
    held, rows = subsets[0]
    for sub, other in subsets[1:]:
        if not rows:
            break
        kept = set(other)
        rows = [r for r in rows if r in kept]
        held = held | sub
    if len(rows) * len(words - held) > seeks:
        return None
    return held, rows


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
