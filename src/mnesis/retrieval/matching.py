"""Which of a query's terms a hit covers, in its own text or in its neighbour context.

The index stems (Porter); this side only needs to agree well enough to grade a
candidate: a word matches any word that starts with its crude stem, a phrase
matches its words in order separated by non-word characters, CJK pieces match as
substrings.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

from mnesis.store.search_query import Phrase, Term
from mnesis.store.search_text import original_text

__all__ = ["Coverage", "TermMatcher"]

_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s", "e", "y")
_WORD_RE = re.compile(r"\w+")
_MAX_CHARS = 2_000
"""Only the start of a long text (a tool log) is checked for terms."""
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
NEIGHBOUR_SHARE = 0.5
"""What a term found only in the previous turn counts, against 1 in the hit's own text,
when that turn asked nothing: the statement itself ranks above the turn after it."""
ANSWER_SHARE = 1.0
"""What a term found only in the previous turn counts when that turn asked a question:
a reply to a question is about the question's subject."""
EARLIER_SHARE = 0.25
"""What a term found only in the turn before the previous one counts."""
META_SHARE = 0.5
"""What a term found only in the speaker/date line counts ("tuesday", "user")."""
IDF_POWER = 0.5
"""How strongly a term's rarity among the candidates weighs (0: all terms alike)."""
OTHER_LINE_SHARE = 0.5
"""What a term counts in a tool input/output when it is not on the line that holds
the most of the query (a long log holds every common word somewhere)."""
_MAX_LINES_CHARS = 20_000
"""Of a tool input/output, the start checked line by line."""


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _word_pattern(word: str) -> str:
    if _CJK_RE.search(word):
        return re.escape(word)
    return r"(?<!\w)" + re.escape(_stem(word)) + r"\w*"


def _phrase_pattern(phrase: Phrase) -> str:
    return r"\W+".join(_word_pattern(w) for w in phrase)


@dataclass(slots=True)
class Coverage:
    """How a hit covers a query: terms in its text, terms only in its context."""

    own: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    neighbour: str | None = None
    """Where the first context-only term was found: ``"speaker/date"``,
    ``"previous turn (user)"``, ``"2 turns back (assistant)"``."""
    shares: list[float] = field(default_factory=list)
    """Per query term: 1 in the text, ``NEIGHBOUR_SHARE`` / ``META_SHARE`` in context, 0."""
    score: float = 0.0
    """The weighted share of the query's terms covered (see ``TermMatcher.grade``)."""
    lines: list[tuple[int, frozenset[int]]] | None = None
    """For a text checked line by line: each line holding query terms, as its start
    offset and the indexes of the terms it holds."""
    best_at: int = -1
    """Where the line holding the most of the query starts (-1: not checked by line)."""


class _Text:
    """A text prepared for term checks: its start, as given and in lower case."""

    __slots__ = ("lower", "text")

    def __init__(self, text: str, limit: int = _MAX_CHARS) -> None:
        self.text = text[:limit]
        self.lower = self.text.lower()

    def prefix_offsets(self, stem: str) -> list[int]:
        """Where the words starting with ``stem`` start."""
        text = self.lower
        out = []
        at = text.find(stem)
        while at >= 0:
            if at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_"):
                out.append(at)
            at = text.find(stem, at + 1)
        return out

    def has_prefix(self, stem: str) -> bool:
        """Whether a word (``\\w+``) of the text starts with ``stem``."""
        text = self.lower
        at = text.find(stem)
        while at > 0:
            before = text[at - 1]
            if not (before.isalnum() or before == "_"):
                return True
            at = text.find(stem, at + 1)
        return at == 0


class TermMatcher:
    """Grades texts against a parsed query's terms."""

    def __init__(self, terms: list[Term]) -> None:
        self.labels = [" ".join(t.alternatives[0]) for t in terms]
        self._checks: list[list[str | re.Pattern[str]]] = []
        for term in terms:
            checks: list[str | re.Pattern[str]] = []
            for phrase in term.alternatives:
                if len(phrase) == 1 and not _CJK_RE.search(phrase[0]):
                    stem = _stem(phrase[0].lower())
                    if _WORD_RE.fullmatch(stem):
                        # Otherwise no word can start with it.
                        checks.append(stem)
                else:
                    checks.append(re.compile(_phrase_pattern(phrase), re.IGNORECASE))
            self._checks.append(checks)

    @staticmethod
    def _holds(text: _Text, checks: list[str | re.Pattern[str]]) -> bool:
        for check in checks:
            if isinstance(check, str):
                if text.has_prefix(check):
                    return True
            elif check.search(text.text):
                return True
        return False

    def _offsets(self, text: _Text, checks: list[str | re.Pattern[str]]) -> list[int]:
        out: list[int] = []
        for check in checks:
            if isinstance(check, str):
                out.extend(text.prefix_offsets(check))
            else:
                out.extend(m.start() for m in check.finditer(text.text))
        return out

    def coverage(self, text: str, context: str | None, *, by_line: bool = False) -> Coverage:
        """Which terms ``text`` holds and which only its ``context`` holds; with
        ``by_line`` (a tool input/output) also which line holds which terms."""
        out = Coverage()
        if not self._checks:
            return out
        if by_line:
            return self._by_line(original_text(text))
        body = _Text(original_text(text))
        lines: list[_Text] | None = None
        raw: list[str] = []
        for label, checks in zip(self.labels, self._checks, strict=True):
            if self._holds(body, checks):
                out.own.append(label)
                out.shares.append(1.0)
                continue
            if lines is None:
                raw = context.split("\n") if context else []
                lines = [_Text(_said(i, line)) for i, line in enumerate(raw)]
            share = 0.0
            for index, line in enumerate(lines):
                if index == 0 and label not in line.lower.split():
                    # The speaker/date line counts whole words only ("use" is no "user").
                    continue
                if self._holds(line, checks):
                    out.context.append(label)
                    share = _share(index, line.text)
                    if out.neighbour is None:
                        out.neighbour = _neighbour_name(index, raw[index])
                    break
            out.shares.append(share)
        return out

    def _by_line(self, text: str) -> Coverage:
        out = Coverage()
        body = _Text(text, _MAX_LINES_CHARS)
        starts = [0] + [m.end() for m in re.finditer("\n", body.text)]
        held: dict[int, set[int]] = {}
        for index, (label, checks) in enumerate(zip(self.labels, self._checks, strict=True)):
            offsets = self._offsets(body, checks)
            out.shares.append(1.0 if offsets else 0.0)
            if offsets:
                out.own.append(label)
            for at in offsets:
                held.setdefault(starts[bisect.bisect_right(starts, at) - 1], set()).add(index)
        out.lines = [(at, frozenset(terms)) for at, terms in sorted(held.items())]
        return out

    def grade(self, coverages: list[Coverage]) -> None:
        """Set each coverage's score: the share of the query's terms it covers, each
        term weighted by its rarity among the candidates (an IDF over the pool), so a
        name that few candidates hold counts more than a word most of them hold. A
        text checked by line counts in full the terms of its best line."""
        weights = self.weights(coverages)
        for c in coverages:
            if c.lines:
                _best_line(c, weights)
            self.score(c, weights)

    def weights(self, coverages: list[Coverage]) -> list[float]:
        """Each term's weight: its damped IDF among ``coverages`` (terms in own text)."""
        total = len(coverages)
        weights = []
        for label in self.labels:
            holders = sum(1 for c in coverages if label in c.own)
            weights.append(math.log(1 + total / (1 + holders)) ** IDF_POWER)
        return weights

    def best_lines(self, coverages: list[Coverage], weights: list[float]) -> None:
        """Choose the best line of each coverage checked by line (see ``grade``)."""
        for c in coverages:
            if c.lines:
                _best_line(c, weights)

    @staticmethod
    def score(coverage: Coverage, weights: list[float]) -> None:
        """Set ``coverage.score`` from its shares and the terms' ``weights``."""
        norm = sum(weights) or 1.0
        coverage.score = sum(w * s for w, s in zip(weights, coverage.shares, strict=True)) / norm


def _best_line(coverage: Coverage, weights: list[float]) -> None:
    """Count in full the terms of the line holding the most (weighted) of the query,
    the others at ``OTHER_LINE_SHARE``."""
    assert coverage.lines is not None
    at, terms = max(coverage.lines, key=lambda line: sum(weights[t] for t in line[1]))
    coverage.best_at = at
    coverage.shares = [
        (1.0 if index in terms else OTHER_LINE_SHARE) if share else 0.0
        for index, share in enumerate(coverage.shares)
    ]


def _said(index: int, line: str) -> str:
    """A context line without its ``role:`` prefix (the first line is the speaker/date
    line itself)."""
    if index == 0:
        return line
    role, colon, text = line.partition(": ")
    return text if colon and role.isalpha() else line


def _share(index: int, line: str) -> float:
    if index == 0:
        return META_SHARE
    if index == 1:
        return ANSWER_SHARE if "?" in line else NEIGHBOUR_SHARE
    return EARLIER_SHARE


def _neighbour_name(index: int, line: str) -> str:
    if index == 0:
        return "speaker/date"
    role = line.split(":", 1)[0] if ":" in line else "?"
    return "previous turn" + f" ({role})" if index == 1 else f"{index} turns back ({role})"
