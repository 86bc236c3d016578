"""SQLite: a relevance search stops walking combinations of terms that few rows hold
together once ``EXHAUSTED_WALKS`` walks have read their postings to the end (issue 28:
the work per query stays bounded however long the history)."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3

import pytest

from mnesis.store.sqlite import search_levels
from mnesis.store.sqlite.search_levels import RelevanceGroup, relevance_keys

_WORDS = ("port", "api", "cache", "queue", "retry", "pool")


def _index() -> sqlite3.Connection:
    """An FTS5 table of 400 rows each holding two of ``_WORDS`` (every pair common) and
    one row holding them all."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text_content, tool_content)")
    rows = [(f"{_WORDS[i % 6]} {_WORDS[(i // 6 + i + 1) % 6]} filler {i}", "") for i in range(400)]
    rows.insert(200, (" ".join(_WORDS), ""))
    conn.executemany("INSERT INTO t (text_content, tool_content) VALUES (?, ?)", rows)
    return conn


def _groups(size: int) -> list[RelevanceGroup]:
    """Every combination of ``size`` words: few rows hold three or more together."""
    out = []
    for combo in itertools.combinations(_WORDS, size):
        terms = " AND ".join(f'"{w}"' for w in combo)
        out.append(
            RelevanceGroup(
                f"{{text_content tool_content}} : ({terms})",
                (f"text_content : ({terms})", f"tool_content : ({terms})"),
            )
        )
    return out


def _statements(conn: sqlite3.Connection) -> list[str]:
    seen: list[str] = []
    conn.set_trace_callback(lambda sql: seen.append(sql) if sql.startswith("SELECT") else None)
    return seen


def test_walks_that_read_every_posting_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    with contextlib.closing(_index()) as conn:
        groups = _groups(4)  # 15 combinations, each held by one row: every walk ends early
        seen = _statements(conn)
        monkeypatch.setattr(search_levels, "EXHAUSTED_WALKS", len(groups) * 3)
        everything = relevance_keys(conn, "t", groups, 4, 1_000)
        assert len(seen) == -(-len(groups) // search_levels._BATCH)
        monkeypatch.setattr(search_levels, "EXHAUSTED_WALKS", 5)
        seen.clear()
        bounded = relevance_keys(conn, "t", groups, 4, 1_000)
        # Two batches of four walks, then it stops; the best combinations were asked.
        assert len(seen) == 2
        assert bounded == everything[: len(bounded)] and bounded
        (row,) = conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (" AND ".join(_WORDS),))
        assert row[0] in bounded


def test_crowded_combinations_do_not_use_up_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_levels, "EXHAUSTED_WALKS", 1)
    with contextlib.closing(_index()) as conn:
        conn.execute("UPDATE t SET tool_content = text_content")
        seen = _statements(conn)
        # Each word alone: every walk stops at its limit, so every batch is asked.
        keys = relevance_keys(conn, "t", _groups(1), 4, 1_000)
        assert len(seen) == 3 * 2
        words = {w for (text,) in _texts(conn, keys) for w in text.split() if w in _WORDS}
        assert words == set(_WORDS)


def _texts(conn: sqlite3.Connection, keys: list[int]) -> list[tuple[str]]:
    marks = ", ".join("?" * len(keys))
    return conn.execute(f"SELECT text_content FROM t WHERE rowid IN ({marks})", keys).fetchall()
