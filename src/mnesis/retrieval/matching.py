"""Which of a query's terms a hit covers, in its own text or in its neighbour context.

The index stems (Porter); this side only needs to agree well enough to grade a
candidate: a word matches any word that starts with its crude stem, a phrase
matches its words in order separated by non-word characters, CJK pieces match as
substrings.
"""

from __future__ import annotations

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
NEIGHBOUR_SHARE = 0.8
"""What a term found only in a previous turn counts, against 1 in the hit's own text:
the reply to a question ranks right after the question."""
ANSWER_SHARE = 1.0
"""What a term found only in the previous turn counts when that turn asked a question:
a reply to a question is about the question's subject."""
EARLIER_SHARE = 0.4
"""What a term found only in the turn before the previous one counts."""
META_SHARE = 0.5
"""What a term found only in the speaker/date line counts ("tuesday", "user")."""
IDF_POWER = 0.5
"""How strongly a term's rarity among the candidates weighs (0: all terms alike)."""


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


class _Text:
    """A text prepared for term checks: its start, as given and in lower case."""

    __slots__ = ("lower", "text")

    def __init__(self, text: str) -> None:
        self.text = text[:_MAX_CHARS]
        self.lower = self.text.lower()

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

    def coverage(self, text: str, context: str | None) -> Coverage:
        """Which terms ``text`` holds and which only its ``context`` holds."""
        out = Coverage()
        if not self._checks:
            return out
        body = _Text(original_text(text))
        lines: list[_Text] | None = None
        for label, checks in zip(self.labels, self._checks, strict=True):
            if self._holds(body, checks):
                out.own.append(label)
                out.shares.append(1.0)
                continue
            if lines is None:
                lines = [_Text(line) for line in context.split("\n")] if context else []
            share = 0.0
            for index, line in enumerate(lines):
                if self._holds(line, checks):
                    out.context.append(label)
                    share = _share(index, line.text)
                    if out.neighbour is None:
                        out.neighbour = _neighbour_name(index, line.text)
                    break
            out.shares.append(share)
        return out

    def grade(self, coverages: list[Coverage]) -> None:
        """Set each coverage's score: the share of the query's terms it covers, each
        term weighted by its rarity among the candidates (an IDF over the pool), so a
        name that few candidates hold counts more than a word most of them hold."""
        if not self._checks or not coverages:
            return
        total = len(coverages)
        weights = []
        for term in range(len(self._checks)):
            label = self.labels[term]
            holders = sum(1 for c in coverages if label in c.own)
            weights.append(math.log(1 + total / (1 + holders)) ** IDF_POWER)
        norm = sum(weights) or 1.0
        for c in coverages:
            c.score = sum(w * s for w, s in zip(weights, c.shares, strict=True)) / norm


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
