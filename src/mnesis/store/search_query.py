"""A backend-neutral full-text query: what to match, never how a backend spells it.

Retrieval parses what users and models type into a :class:`SearchQuery`; each backend
renders it in its own syntax (an FTS5 ``MATCH`` expression on SQLite, a ``tsquery`` on
PostgreSQL). Words are the lower-case tokens the index holds before stemming; the
backend applies its own stemming and quoting, so no input can form an operator.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from mnesis.errors import InvalidArgumentError

__all__ = ["Phrase", "SearchQuery", "Term"]

Phrase = tuple[str, ...]
"""Consecutive words that must appear in this order (one word is a phrase of one)."""


@dataclass(frozen=True, slots=True)
class Term:
    """One thing to look for: any of its alternative phrases may match.

    ``Term((("moved",),))`` is a word; ``Term((("db", "staging"),))`` a phrase;
    ``Term((("choose",), ("chose",), ("chosen",)))`` a word with its irregular forms.
    """

    alternatives: tuple[Phrase, ...]

    def __post_init__(self) -> None:
        if not self.alternatives or not all(
            phrase and all(isinstance(w, str) and w for w in phrase) for phrase in self.alternatives
        ):
            raise InvalidArgumentError(f"a search term needs non-empty phrases: {self!r}")

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

    def __post_init__(self) -> None:
        if not self.all_of and not self.any_of:
            raise InvalidArgumentError("a search query needs at least one term to match")
        if not 1 <= self.at_least <= max(1, len(self.any_of)):
            raise InvalidArgumentError(
                f"at_least must be between 1 and the number of any_of terms: {self.at_least}"
            )

    def any_groups(self) -> list[tuple[Term, ...]]:
        """``any_of`` as alternatives that must each match in full: one term each,
        or every combination of ``at_least`` terms."""
        if self.at_least <= 1:
            return [(t,) for t in self.any_of]
        return list(itertools.combinations(self.any_of, self.at_least))

    def words(self) -> list[str]:
        """Every word the query mentions, first occurrence first (for highlighting)."""
        seen: dict[str, None] = {}
        for term in (*self.all_of, *self.any_of):
            for phrase in term.alternatives:
                for word in phrase:
                    seen.setdefault(word, None)
        return list(seen)
