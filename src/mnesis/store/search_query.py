"""A backend-neutral full-text query: what to match, never how a backend spells it.

Retrieval parses what users and models type into a :class:`SearchQuery`; each backend
renders it in its own syntax (an FTS5 ``MATCH`` expression on SQLite, a ``tsquery`` on
PostgreSQL). Words are the lower-case tokens the index holds before stemming; the
backend applies its own stemming and quoting, so no input can form an operator.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from mnesis.errors import InvalidArgumentError

__all__ = [
    "MAX_GROUPS",
    "RELEVANCE_GROUPS",
    "SPEAKER_DATE_WORDS",
    "TERM_COUNT_CAP",
    "GroupMatches",
    "Phrase",
    "QuerySyntax",
    "SearchQuery",
    "Term",
    "render_query",
]

MAX_GROUPS = 12
"""Most term combinations a coordination level of a ``descending`` query may take."""

RELEVANCE_GROUPS = 28
"""Most term combinations a ``relevance`` query asks the index for."""
TERM_COUNT_CAP = 2_000
"""Postings a ``relevance`` query reads per term to weigh it: a term held by more
rows counts as common (its weight is the floor)."""

SPEAKER_DATE_WORDS = frozenset(
    """user assistant system monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november
    december""".split()
)
"""Words a part's neighbour context holds on its first line (speaker and date): a
term made of them matches there, not in the part's own text."""

Phrase = tuple[str, ...]
"""Consecutive words that must appear in this order (one word is a phrase of one)."""


@dataclass(frozen=True, slots=True)
class Term:
    """One thing to look for: any of its alternative phrases may match.

    ``Term((("moved",),))`` is a word; ``Term((("db", "staging"),))`` a phrase;
    ``Term((("choose",), ("chose",), ("chosen",)))`` a word with its irregular forms.
    """

    alternatives: tuple[Phrase, ...]
    typed: Phrase = ()
    """The term as typed, split at whitespace only (``("src/app/db.py",)``), when a piece
    holds a character that is no word character: an index whose parser keeps such a
    piece whole (PostgreSQL makes a path, a host name or a URL one lexeme) matches it
    as one more alternative; an index that splits it as the words are split ignores it."""

    def __post_init__(self) -> None:
        if not self.alternatives or not all(
            phrase and all(isinstance(w, str) and w for w in phrase) for phrase in self.alternatives
        ):
            raise InvalidArgumentError(f"a search term needs non-empty phrases: {self!r}")
        if not all(isinstance(w, str) and w.strip() for w in self.typed):
            raise InvalidArgumentError(f"a search term's typed pieces must be non-empty: {self!r}")

    @classmethod
    def word(cls, word: str) -> Term:
        """A single word."""
        return cls(((word,),))

    @classmethod
    def phrase(cls, *words: str) -> Term:
        """Words that must appear consecutively."""
        return cls((tuple(words),))


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """Documents containing every term of ``all_of``, at least one of ``any_of`` (when
    given) and not every term of ``not_all_of`` (when given).

    Ranking is the backend's (BM25 on SQLite, ``ts_rank_cd`` on PostgreSQL), with tool
    input/output and neighbour context weighted below conversation text.
    """

    all_of: tuple[Term, ...] = ()
    any_of: tuple[Term, ...] = ()
    not_all_of: tuple[Term, ...] = ()
    include_context: bool = False
    """Also match (at a lower weight) a message part's neighbour context: its speaker
    and date and the previous conversation turns (see ``SearchHit.context``)."""
    context_only: bool = False
    """Match a message part's neighbour context alone, ranked by it: the replies to
    the turns that hold the words (implies ``include_context``)."""
    at_least: int = 1
    """How many terms of ``any_of`` must match (graded coordination: "all but one"
    is an intersection, far cheaper than "any" over common words)."""
    newest_first: bool = False
    """Return the newest matches, unranked (``rank`` 0): the index stops after
    ``limit`` matches, so this stays cheap however common the words are; ranking
    scores every match (and, on SQLite, scans every term's postings for its IDF)."""
    group_limit: int | None = None
    """With ``newest_first``: the union of the newest ``group_limit`` matches of each
    group of :meth:`any_groups` (see :meth:`per_group`), so the few matches of a
    group holding a rare term are never crowded out by a common group's many. With
    ``include_context``, a group with more matches first gives its newest matches
    whose own text holds its terms (see :meth:`own_text_terms`), and then also its
    oldest ones (where an instruction that later turns repeat was first given)."""
    descending: bool = False
    """With ``group_limit``: walk the coordination levels (see :meth:`levels`) from
    every ``any_of`` term down to ``at_least``, best first, and stop after the level
    that brings the matches to ``limit``: graded coordination in one call."""
    relevance: bool = False
    """Candidates by relevance, position at most a tie-breaker (see
    :meth:`relevance_groups`): each term's rows are counted (at most
    ``TERM_COUNT_CAP`` postings read), the combinations of ``any_of`` terms are
    taken best first by the sum of their terms' weights (rarer terms weigh more), and
    each gives its matches in conversation text, then in tool input/output (terms
    near each other where the index can tell), ``group_limit`` of each, until
    ``limit`` candidates, without their neighbour context (``SearchHit.context`` is
    None: they match in their own text). Not with ``newest_first``."""

    def __post_init__(self) -> None:
        if not self.all_of and not self.any_of:
            raise InvalidArgumentError("a search query needs at least one term to match")
        if not 1 <= self.at_least <= max(1, len(self.any_of)):
            raise InvalidArgumentError(
                f"at_least must be between 1 and the number of any_of terms: {self.at_least}"
            )
        if self.group_limit is not None and (
            not (self.newest_first or self.relevance) or self.group_limit < 1
        ):
            raise InvalidArgumentError(
                "group_limit needs newest_first or relevance and must be at least 1: "
                f"{self.group_limit}"
            )
        if self.descending and self.group_limit is None:
            raise InvalidArgumentError("descending needs group_limit")
        if self.relevance and (self.newest_first or self.context_only or not self.any_of):
            raise InvalidArgumentError(
                "relevance needs any_of terms and excludes newest_first and context_only"
            )

    def relevance_groups(self, counts: list[int], total: int) -> list[tuple[Term, ...]]:
        """The combinations of ``any_of`` terms a ``relevance`` query asks for, best
        first: by the sum of their terms' weights, ``log(1 + total / count)`` (a
        term's matching rows, ``counts[i]``, capped; ``total``: rows searched), then by
        size; a term no row holds is left out. At most ``RELEVANCE_GROUPS``, every
        rare term alone among them (so its matches are never crowded out); a common
        term (``TERM_COUNT_CAP`` rows or more) alone only in a one-term query."""
        weights = {
            term: math.log(1 + max(total, count) / count)
            for term, count in zip(self.any_of, counts, strict=True)
            if count > 0
        }
        terms = [t for t in self.any_of if t in weights]
        combos: list[tuple[Term, ...]] = []
        for size in range(len(terms), 0, -1):
            if math.comb(len(terms), size) > 4 * RELEVANCE_GROUPS and size > 1:
                continue
            combos.extend(itertools.combinations(terms, size))
        combos.sort(key=lambda g: (-sum(weights[t] for t in g), -len(g)))
        # A common term alone is a crowd in position order (and a long walk of its
        # postings): asked only when no combination of two terms can match.
        counted = dict(zip(self.any_of, counts, strict=True))
        singles = [
            g for g in combos if len(g) == 1 and (counted[g[0]] < TERM_COUNT_CAP or len(terms) < 2)
        ]
        best = [g for g in combos if len(g) > 1][: RELEVANCE_GROUPS - len(singles)]
        return sorted([*best, *singles], key=combos.index)

    def levels(self) -> list[SearchQuery]:
        """The coordination levels of a ``descending`` query, best first: every
        ``any_of`` term, then one fewer, down to ``at_least``; a level between the
        first and one term is left out when it would take more than
        ``MAX_GROUPS`` combinations. Just this query when not ``descending``."""
        if not self.descending or len(self.any_of) <= 1:
            return [self]
        count = len(self.any_of)
        return [
            dataclasses.replace(self, at_least=k, descending=False)
            for k in range(count, self.at_least - 1, -1)
            if k in (1, count) or math.comb(count, k) <= MAX_GROUPS
        ]

    def any_groups(self) -> list[tuple[Term, ...]]:
        """``any_of`` as alternatives that must each match in full: one term each,
        or every combination of ``at_least`` terms."""
        if self.at_least <= 1:
            return [(t,) for t in self.any_of]
        return list(itertools.combinations(self.any_of, self.at_least))

    def per_group(self) -> list[SearchQuery]:
        """One query per group of :meth:`any_groups` (every term of the group
        required); their union is this query's matches."""
        if not self.any_of:
            return [self]
        return [
            SearchQuery(
                all_of=(*self.all_of, *group),
                not_all_of=self.not_all_of,
                include_context=self.include_context,
                context_only=self.context_only,
                newest_first=self.newest_first,
            )
            for group in self.any_groups()
        ]

    def planned_groups(self) -> list[list[SearchQuery]]:
        """The groups to search, level by level (see :meth:`levels`)."""
        return [level.per_group() for level in self.levels()]

    def own_text_terms(self) -> tuple[tuple[Term, ...], tuple[Term, ...]]:
        """For the own-text matches of a single-group query (see ``group_limit``):
        the ``all_of`` terms its own text must hold, and its speaker/date terms, which
        may match the context's first line instead."""
        own = tuple(t for t in self.all_of if not _speaker_date(t))
        return own, tuple(t for t in self.all_of if _speaker_date(t))

    def words(self) -> list[str]:
        """Every word the query mentions, first occurrence first (for highlighting)."""
        seen: dict[str, None] = {}
        for term in (*self.all_of, *self.any_of):
            for phrase in term.alternatives:
                for word in phrase:
                    seen.setdefault(word, None)
        return list(seen)


def _speaker_date(term: Term) -> bool:
    return all(len(p) == 1 and p[0] in SPEAKER_DATE_WORDS for p in term.alternatives)


class GroupMatches:
    """Collects the keys of each group's matches in the order a ``newest_first``
    search returns them: level by level; within a level the groups' own-text
    matches first, then newest and oldest matches, the groups taking turns."""

    def __init__(self) -> None:
        self._keys: dict[int, None] = {}
        self._level: list[list[int]] = []
        self._own: list[list[int]] = []

    def add_group(self, newest: list[int], own_text: list[int], oldest: list[int]) -> None:
        """One group of the current level."""
        self._own.append(own_text)
        self._level.append(newest + oldest)

    def end_level(self) -> int:
        """Close the current level; the number of distinct keys so far."""
        for lists in (self._own, self._level):
            for round_ in itertools.zip_longest(*lists):
                self._keys.update(dict.fromkeys(k for k in round_ if k is not None))
        self._level, self._own = [], []
        return len(self._keys)

    def keys(self) -> list[int]:
        """Every key, best first."""
        return list(self._keys)


class QuerySyntax(NamedTuple):
    """How a full-text index's query language joins terms (spaces included)."""

    and_: str
    or_: str
    and_not: str
    """Between the query and the terms it must not hold (each in parentheses)."""


def render_query(query: SearchQuery, term: Callable[[Term], str], syntax: QuerySyntax) -> str:
    """``query`` in an index's syntax, ``term`` rendering each (quoted) term."""
    parts = [term(t) for t in query.all_of]
    if query.any_of:
        groups = [syntax.and_.join(term(t) for t in g) for g in query.any_groups()]
        if query.at_least > 1:
            groups = [f"({g})" for g in groups]
        parts.append("(" + syntax.or_.join(groups) + ")")
    expression = syntax.and_.join(parts)
    if query.not_all_of:
        excluded = syntax.and_.join(term(t) for t in query.not_all_of)
        expression = f"({expression}){syntax.and_not}({excluded})"
    return expression
