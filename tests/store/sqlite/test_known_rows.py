"""SQLite: a relevance search finds a combination of terms among the rows a pair (or a
rare term) of it is known to match, and gives exactly what walking the index gives.

The session is the aged benchmark's filler (tool outputs saying the question words
all the time) with the benchmark's facts planted; each question is asked with the
known rows used and with every combination walked, as before they were."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from benchmarks import recall_aged

from mnesis import MnesisConfig, MnesisSession
from mnesis.config import CompactionConfig
from mnesis.retrieval.query import parse_query
from mnesis.store import StorePool
from mnesis.store.base import SearchFilter
from mnesis.store.search_query import SearchQuery
from mnesis.store.sqlite import search_levels, search_rows

TURNS = 600


async def _asked(path: str, pool: StorePool, session_id: str, questions: list[str]) -> list[Any]:
    store = await pool.acquire(db_path=path)
    answers = []
    for question in questions:
        parsed = parse_query(question)
        query = SearchQuery(
            all_of=tuple(parsed.required),
            any_of=tuple(parsed.optional),
            relevance=True,
            group_limit=3,
        )
        hits = await store.search_text(
            query=query, scope="messages", where=SearchFilter(session_ids=[session_id]), limit=24
        )
        answers.append([h.key for h in hits])
    return answers


async def test_known_rows_give_what_the_walks_give(
    tmp_path: Path, pool: StorePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "aged.db")
    session = await MnesisSession.create(
        model="fake/m",
        db_path=path,
        pool=pool,
        config=MnesisConfig(compaction=CompactionConfig(auto=False)),
    )
    session_id = session.id
    corpus = recall_aged.AgedCorpus(TURNS)
    for batch in recall_aged.stream(corpus, session_id, batch=TURNS):
        await session.store.append_batch(batch)
    questions = [q.text for q in corpus.questions][::2]
    seeks: list[int] = []
    scratch: list[int] = []
    holding, near = search_levels.holding, search_levels.near_matches

    def counted_holding(conn: sqlite3.Connection, table: str, checks: Any) -> Any:
        seeks.append(sum(len(rows) for _, _, rows in checks))
        return holding(conn, table, checks)

    def counted_near(conn: sqlite3.Connection, checks: Any) -> Any:
        scratch.append(sum(len(rows) for _, rows in checks))
        return near(conn, checks)

    monkeypatch.setattr(search_levels, "holding", counted_holding)
    monkeypatch.setattr(search_levels, "near_matches", counted_near)
    fast = await _asked(path, pool, session_id, questions)
    # The known rows were used: combinations found by seeks, tool parts by the scratch
    # index.
    assert sum(seeks) > 100 and sum(scratch) > 10
    with monkeypatch.context() as walking:
        walking.setattr(search_levels, "_first_rows", lambda *args: ({}, {}))
        walking.setattr(search_levels, "_known_superset", lambda *args: None)
        walked = await _asked(path, pool, session_id, questions)
    assert sum(map(len, walked)) > 10 * len(questions)
    assert fast == walked
    await session.close()


def test_the_scratch_index_tokenizes_as_the_message_index(db_path: str) -> None:
    with sqlite3.connect(db_path) as conn:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'message_parts_fts'"
        ).fetchone()
    assert f"tokenize='{search_rows.TOKENIZE}'" in sql


def test_the_scratch_index_takes_bounded_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = sqlite3.connect(tmp_path / "parts.db")
    conn.execute("CREATE TABLE message_parts (text_content TEXT, session_id TEXT, part_type TEXT)")
    conn.executemany(
        "INSERT INTO message_parts (rowid, text_content, session_id, part_type) "
        "VALUES (?, ?, 'sess_s1', 'tool')",
        [(1, "the api listens on port 80"), (2, "port " + "x " * 40 + "api"), (3, "ports")],
    )
    near = 'session_id : ("s1") AND (tool_content : (NEAR("port" "api", 12)))'
    assert search_rows.near_matches(conn, [(near, [1, 2, 3]), (near, [2])]) == [[1], []]
    assert search_rows.near_matches(conn, [('tool_content : ("port")', [3, 2])]) == [[2, 3]]
    assert search_rows.tool_parts(conn, [1, 3, 9]) == {1, 3}
    monkeypatch.setattr(search_rows, "SCRATCH_CHARS", 40)
    assert search_rows.near_matches(conn, [(near, [1, 2])]) is None
