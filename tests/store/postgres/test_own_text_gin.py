"""PostgreSQL, migration m013 and the bound of a ``relevance`` search.

A relevance search asks each part of a combination of words (conversation text, tool
input/output) through the GIN index of parts' own text (m013), reading at most
``CANDIDATES + 1`` rows per part: a part with more takes its newest matches from the
windows of newest rows, else from the rows it read. An older database gets the
indexes on opening and searches exactly as before.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from psycopg import ClientCursor

from mnesis.models.ids import new_id
from mnesis.store import SessionRecord
from mnesis.store.base import SearchFilter
from mnesis.store.postgres import PostgresStore, relevance, term_counts
from mnesis.store.postgres import db as postgres_db
from mnesis.store.postgres.migrations import MIGRATIONS
from mnesis.store.search_query import SearchQuery, Term
from tests.store.postgres.filled import open_store, turn_message

pytestmark = pytest.mark.postgres

_INDEXES = ("message_parts_text_gin_idx", "message_parts_tool_gin_idx", "messages_summary_idx")


async def _append(store: PostgresStore, sid: str, turns: int) -> None:
    """``turns`` messages saying "port" and "api" (every third with a tool output that
    says them too), and one that says "listen" as well, at a third of the history."""
    batch = []
    for turn in range(turns):
        text = f"the port {turn} of the api {turn % 7} is busy"
        if turn == turns // 3:
            text = "the api will listen on port 8443"
        batch.append(turn_message(sid, turn, text, f"api port {turn} refused"))
    await store.append_messages(batch)


def _query(*words: str) -> SearchQuery:
    return SearchQuery(any_of=tuple(Term.word(w) for w in words), relevance=True, group_limit=4)


async def _search(store: PostgresStore, sid: str) -> list[list[str | None]]:
    out = []
    for words in (("port", "api", "listen"), ("refused", "api"), ("busy", "8443")):
        hits = await store.search_text(
            query=_query(*words), scope="messages", where=SearchFilter(session_ids=[sid]), limit=12
        )
        out.append([h.part_id for h in hits])
    return out


def _indexes(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname = ANY(%s)", [list(_INDEXES)]
        ).fetchall()
    return {r[0] for r in rows}


async def test_m013_indexes_an_older_database(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = new_id("sess")
    names = [name for name, _ in MIGRATIONS]
    with monkeypatch.context() as patch:
        patch.setattr(postgres_db, "MIGRATIONS", MIGRATIONS[: names.index("m013_own_text_gin")])
        store = await open_store(pg_url)
        await store.create_session(SessionRecord(id=sid, model="m"))
        await _append(store, sid, 90)
        before = await _search(store, sid)
        await store.db.close()
    assert _indexes(pg_url) == set()

    store = await open_store(pg_url)
    try:
        assert _indexes(pg_url) == set(_INDEXES)
        assert await _search(store, sid) == before
        assert all(before)
        with psycopg.connect(pg_url) as conn:
            conn.execute("SET enable_seqscan = off")
            plan = conn.execute(
                "EXPLAIN SELECT key FROM message_parts p WHERE p.part_type <> 'tool' "
                "AND p.search_tsv @@ to_tsquery('english', 'port & api')"
            ).fetchall()
        assert "message_parts_text_gin_idx" in " ".join(r[0] for r in plan)
    finally:
        await store.db.close()


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    """A plan's nodes, depth first."""
    return [node, *(n for child in node.get("Plans", []) for n in _nodes(child))]


async def test_a_crowded_part_reads_at_most_its_cap_of_rows(
    pg_store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = new_id("sess")
    await pg_store.create_session(SessionRecord(id=sid, model="m"))
    await _append(pg_store, sid, 150)
    statements: list[tuple[str, list[Any]]] = []

    async def traced(conn: Any, sql: str, args: Any = ()) -> Any:
        statements.append((sql, list(args)))
        return await fetch(conn, sql, args)

    read: list[list[Any]] = []

    async def enumerated(*args: Any) -> Any:
        read.append(await enumerate_parts(*args))
        return read[-1]

    fetch, enumerate_parts = relevance.fetch, relevance._enumerated
    monkeypatch.setattr(relevance, "fetch", traced)
    monkeypatch.setattr(relevance, "_enumerated", enumerated)
    monkeypatch.setattr(relevance, "CANDIDATES", 10)
    query = _query("port", "api", "listen")
    where = SearchFilter(session_ids=[sid])
    results = {}
    for windows in ((), (256, 4096)):
        pg_store.search.search_windows = windows
        hits = await pg_store.search_text(query=query, scope="messages", where=where, limit=12)
        results[windows] = [h.text for h in hits]
        assert "the api will listen on port 8443" in results[windows][:1]
        if not windows:
            # No window: one statement reads every part of every combination (no
            # walk of a crowded part's matches).
            assert len(statements) == 1
    with psycopg.connect(pg_url, cursor_factory=ClientCursor) as conn:
        crowded = conn.execute(
            "SELECT count(*) FROM message_parts WHERE text_content LIKE 'the port%%api%%'"
        ).fetchone()
        conn.execute("ANALYZE")
        conn.execute("SET enable_seqscan = off")
        sql, args = statements[0]
        row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + conn.cursor().mogrify(sql, args))
        plan = row.fetchone()
    assert crowded is not None and crowded[0] == 149 and plan is not None
    nodes = _nodes((plan[0] if isinstance(plan[0], list) else json.loads(plan[0]))[0]["Plan"])
    # Each part's scan stops at its cap: 11 rows of the 149 that hold "port" and
    # "api" (the GIN index hands over all of their postings, the heap is read for
    # 11), never sorted (a sort would read them all).
    scans = [n for n in nodes if n["Node Type"] == "Bitmap Heap Scan"]
    assert scans and all(n["Actual Rows"] <= 11 for n in scans)
    assert "Sort" not in {n["Node Type"] for n in nodes}
    found = [ends.found for ends in read[0]]
    assert max(found) == 11 and len(found) == 14
    # With windows, the crowded parts' newest matches are the newest of all.
    assert "the port 149 of the api 2 is busy" in results[(256, 4096)]


async def test_a_count_at_the_cap_is_kept_and_not_asked_again(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = new_id("sess")
    await pg_store.create_session(SessionRecord(id=sid, model="m"))
    await _append(pg_store, sid, 30)
    monkeypatch.setattr(term_counts, "TERM_COUNT_CAP", 5)
    where = SearchFilter(session_ids=[sid])
    terms = tuple(Term.word(w) for w in ("port", "listen", "refused"))
    counter = pg_store.search.term_counts

    async def counts() -> tuple[list[int], int]:
        return await pg_store.db.read(lambda conn: counter.counts(conn, terms, where))

    first = await counts()
    # "port" and "refused" (every third tool output) reach the cap, "listen" (one
    # message, and the next turns' context) does not.
    assert first[0][::2] == [5, 5] and 0 < first[0][1] < 5 and first[1] >= 40
    assert len(counter) == 2
    asked: list[str] = []

    async def traced(conn: Any, sql: str, args: Any = ()) -> Any:
        asked.append(sql)
        return await fetch_one(conn, sql, args)

    fetch_one = term_counts.fetch_one
    monkeypatch.setattr(term_counts, "fetch_one", traced)
    assert await counts() == first
    # Only "listen" is counted again (one count subquery; the two kept are NULL).
    ((sql,),) = [asked]
    assert sql.count("count(*)") == 1 and sql.count("NULL::bigint") == 2
