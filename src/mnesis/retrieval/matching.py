"""Which of a query's terms a hit covers, in its own text or in its neighbour context.

The index stems (Porter); this side only needs to agree well enough to grade a
candidate: a word matches any word that starts with its crude stem, a phrase
matches its words in order separated by non-word characters, CJK pieces match as
substrings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mnesis.store.search_query import Phrase, Term
from mnesis.store.search_text import original_text

__all__ = ["Coverage", "TermMatcher"]

_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s", "e", "y")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
CONTEXT_SHARE = 0.5
"""What a term found only in a hit's neighbour context counts, against 1 in its text."""


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
    score: float = 0.0
    """Own terms count 1, context-only terms ``CONTEXT_SHARE``, over all terms."""


class TermMatcher:
    """Grades texts against a parsed query's terms."""

    def __init__(self, terms: list[Term]) -> None:
        self.labels = [" ".join(t.alternatives[0]) for t in terms]
        self._patterns = [
            re.compile("|".join(_phrase_pattern(p) for p in t.alternatives), re.IGNORECASE)
            for t in terms
        ]

    def coverage(self, text: str, context: str | None) -> Coverage:
        """Which terms ``text`` holds and which only its ``context`` holds."""
        out = Coverage()
        if not self._patterns:
            return out
        body = original_text(text)
        lines = context.split("\n") if context else []
        for label, pattern in zip(self.labels, self._patterns, strict=True):
            if pattern.search(body):
                out.own.append(label)
                continue
            for index, line in enumerate(lines):
                if pattern.search(line):
                    out.context.append(label)
                    if out.neighbour is None:
                        out.neighbour = _neighbour_name(index, line)
                    break
        out.score = (len(out.own) + CONTEXT_SHARE * len(out.context)) / len(self._patterns)
        return out


def _neighbour_name(index: int, line: str) -> str:
    if index == 0:
        return "speaker/date"
    role = line.split(":", 1)[0] if ":" in line else "?"
    return "previous turn" + f" ({role})" if index == 1 else f"{index} turns back ({role})"
