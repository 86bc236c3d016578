"""What the full-text index holds for a piece of text, and how queries are written.

SQLite's ``unicode61`` tokenizer treats a run of CJK characters as one token, so
"記憶管理" would only match the whole run. The store therefore appends the
overlapping bigrams of every CJK run after an invisible separator, and the
query side turns CJK words into phrases of bigrams. The original text is
everything before the separator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mnesis.store.shared.search_context import search_context

__all__ = ["CJK_SEPARATOR", "cjk_bigrams", "index_text", "original_text", "speaker_lines"]

CJK_SEPARATOR = "\n\u2063"
_CJK_RUN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\u1100-\u11ff]+"
)
_CJK_LEADS = tuple(bytes((lead,)) for lead in (0xE1, *range(0xE3, 0xEE), 0xEF))
"""The first byte of the UTF-8 of every character :data:`_CJK_RUN` matches (U+1100-U+11FF
begin with E1, U+3040-U+D7AF with E3-ED, U+F900-U+FAFF with EF)."""


def _may_hold_cjk(text: str) -> bool:
    """False when ``text`` surely holds no CJK run: its UTF-8 has none of their first
    bytes (an encoding and a ``memchr`` per byte, some twenty times faster than the
    pattern's scan of a long text of arrows and dashes)."""
    data = text.encode("utf-8", "surrogatepass")
    return any(lead in data for lead in _CJK_LEADS)


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping bigrams of every CJK run (a single character stays as is)."""
    grams: list[str] = []
    for run in _CJK_RUN.findall(text):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def index_text(text: str) -> str:
    """The text stored for indexing: the original plus CJK bigrams when present."""
    if text.isascii() or not _may_hold_cjk(text):
        return text
    grams = cjk_bigrams(text)
    if not grams:
        return text
    return text + CJK_SEPARATOR + " ".join(grams)


def original_text(indexed: str) -> str:
    """Undo :func:`index_text`."""
    cut = indexed.find(CJK_SEPARATOR)
    return indexed if cut < 0 else indexed[:cut]


def speaker_lines(rows: Sequence[Sequence[Any]]) -> dict[Any, str | None]:
    """The first line of each conversation part's neighbour context (speaker and
    date, ``user 2026-01-06 tuesday january``) among a search page's rows (see
    ``hit_contexts.hits_of``), computed without reading the neighbours."""
    return {r[0]: search_context(r[5], r[6], []) for r in rows if r[8] is None and r[5]}
