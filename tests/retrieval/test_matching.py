"""Term checks of the re-ranker: a word matches any word of a text that starts with its
crude stem (words are runs of ``\\w``), whatever surrounds it."""

from __future__ import annotations

import re

import pytest

from mnesis.retrieval.matching import TermMatcher
from mnesis.store.search_query import Term

TEXTS = [
    "Keep the billing retry limit at 7",
    "snake_case_name and camelCase",
    "path src/ledger/util/retry.py:42",
    "naïve café-bar über straße",
    "x-retry-after=30; RETRIES exceeded",
    "Retrying... retried! (retries)",
    "",
    "unretry pre_retry 7retry",
    "Ünïcode ÜBER Über",
]
WORDS = ["retry", "retries", "case", "name", "camel", "bar", "café", "über", "limit", "7", "re"]


def _word_set_holds(text: str, word: str) -> bool:
    """The reference: some ``\\w+`` word of the lower-cased text starts with the stem."""
    [stem] = TermMatcher([Term.word(word)])._checks[0]
    assert isinstance(stem, str)
    return any(w.startswith(stem) for w in re.findall(r"\w+", text.lower()))


@pytest.mark.parametrize("text", TEXTS)
def test_a_word_matches_exactly_the_words_that_start_with_its_stem(text: str) -> None:
    for word in WORDS:
        covered = TermMatcher([Term.word(word)]).coverage(text, None).own
        assert bool(covered) == _word_set_holds(text, word), (text, word)


def test_a_word_inside_another_word_does_not_match() -> None:
    matcher = TermMatcher([Term.word("case"), Term.word("retry")])
    assert matcher.coverage("snake_case unretry", None).own == []
    assert matcher.coverage("a case to retry", None).own == ["case", "retry"]


def test_a_word_with_punctuation_matches_nothing_on_its_own() -> None:
    matcher = TermMatcher([Term.word("a.b")])
    assert matcher.coverage("a.b a b", None).own == []
