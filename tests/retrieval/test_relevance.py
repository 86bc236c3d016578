"""Issue 28: candidates by relevance, not by position (both backends).

The two misses of the issue, planted in a generated coding session whose filler says
"port", "API", "staging", "password" all the time; the README example returning the
tool output that says which tests failed; and the bound on the relevance search's
work (postings counted, rows read per subquery) on SQLite."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from benchmarks import recall_aged

from mnesis import MnesisConfig, MnesisSession, StorePool, TextPart, ToolPart
from mnesis.config import CompactionConfig
from mnesis.retrieval.query import parse_query
from mnesis.store.base import NewMessage, SearchFilter
from mnesis.store.search_query import SearchQuery, Term
from mnesis.store.sqlite import search as sqlite_search
from mnesis.store.sqlite import search_levels
from tests.retrieval.helpers import new_session

PLANTED = {
    "which port did we settle on for the API?": (
        "We agreed the public API will listen on port 8443 from now on."
    ),
    "how often does the staging DB password get rotated?": (
        "the staging database password rotates every 17 days"
    ),
}


async def _generated(db_path: str, pool: StorePool, turns: int) -> tuple[MnesisSession, list[str]]:
    """A generated session (filler that says "port", "API", "staging", "password",
    "the port is already in use", "the password prompt hangs" all the time) with the
    issue's two facts planted at a third and at half of its history (user turns)."""
    session = await MnesisSession.create(
        model="fake/m",
        db_path=db_path,
        pool=pool,
        config=MnesisConfig(compaction=CompactionConfig(auto=False)),
    )
    messages = recall_aged.filler(session.id, turns, seed=5)
    planted: list[str] = []
    for fact, at in zip(PLANTED.values(), (turns // 3, turns // 2), strict=True):
        index = next(i for i in range(at, turns) if messages[i].message.role == "user")
        message = messages[index].message
        messages[index] = NewMessage(message, [TextPart(text=fact)], [20])
        planted.append(message.id)
    await session.store.append_messages(messages)
    return session, planted


async def test_the_issues_two_misses_are_found_first(db_path: str, pool: StorePool) -> None:
    session, planted = await _generated(db_path, pool, 1_000)
    for question, fact_id in zip(PLANTED, planted, strict=True):
        found = await session.grep(question, scope="messages", limit=5)
        assert found.matches[0].id == fact_id, [m.snippet for m in found.matches]
        assert found.matches[0].snippet in PLANTED.values()
    await session.close()


async def test_which_tests_failed_returns_the_tool_output(db_path: str, pool: StorePool) -> None:
    session = await new_session(db_path, pool)
    await session.record("Migrate the payments service to async.", "On it.")
    turn = await session.record(
        "Run the tests",
        [
            TextPart(text="Running pytest."),
            ToolPart(
                tool_name="bash",
                tool_call_id="call_1",
                input={"command": "pytest -q"},
                output="3 failed, 120 passed",
            ),
        ],
    )
    found = await session.grep("which tests failed?")
    first = found.matches[0]
    assert first.id == turn.assistant_message_id
    assert "3 failed, 120 passed" in first.snippet
    assert "failed" in first.matched_terms
    await session.close()


async def test_a_tool_output_hit_shows_its_best_line(db_path: str, pool: StorePool) -> None:
    session = await new_session(db_path, pool)
    lines = [f"INFO request {i} served" for i in range(200)]
    lines[150] = "WARN the billing upstream timeout is 42 seconds"
    await session.record(
        "check the logs",
        [
            ToolPart(
                tool_name="bash",
                tool_call_id="call_1",
                input={"command": "kubectl logs deploy/billing"},
                output="\n".join(lines),
            )
        ],
    )
    found = await session.grep("billing upstream timeout", scope="messages")
    assert "upstream timeout is 42 seconds" in found.matches[0].snippet
    await session.close()


async def test_the_newer_of_two_statements_ranks_first_when_asked_for_now(
    db_path: str, pool: StorePool
) -> None:
    session = await new_session(db_path, pool)
    old = await session.record("the billing API listens on port 8443", "noted")
    for index in range(5):
        await session.record(f"unrelated chat {index}", "ok")
    new = await session.record("update: the billing API listens on port 9443", "noted")
    found = await session.grep("which port does the billing API use now?", scope="messages")
    ids = [m.id for m in found.matches]
    assert ids.index(new.user_message_id) < ids.index(old.user_message_id)
    await session.close()


def _counting(calls: list[Any], function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def counted(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        calls.append((args, result))
        return result

    return counted


@pytest.mark.sqlite_only("counts SQLite statements (PostgreSQL's: the test below)")
async def test_the_relevance_search_reads_a_bounded_number_of_rows(
    db_path: str, pool: StorePool, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = await new_session(db_path, pool)
    for index in range(60):
        await session.record(f"the port {index} is busy", f"the api {index} answered")
    await session.record("the api will listen on port 8443", "noted")
    counted: list[Any] = []
    limited: list[Any] = []
    monkeypatch.setattr(sqlite_search, "TERM_COUNT_CAP", 25)
    monkeypatch.setattr(
        sqlite_search, "capped_counts", _counting(counted, search_levels.capped_counts)
    )
    monkeypatch.setattr(
        search_levels, "_union_of_limited", _counting(limited, search_levels._union_of_limited)
    )
    query = SearchQuery(
        any_of=(Term.word("port"), Term.word("api"), Term.word("listen")),
        relevance=True,
        group_limit=4,
    )
    hits = await session.store.search_text(
        query=query, scope="messages", where=SearchFilter(session_ids=[session.id]), limit=10
    )
    assert "the api will listen on port 8443" in [h.text for h in hits][:1]
    # Each term's postings are read up to the cap, not to the end.
    ((_, counts),) = counted
    assert counts[:2] == [25, 25]
    # Each walk stops one row after its limit: ``KNOWN_ROWS`` for a rare term or a
    # pair (walked first), twice the group's limit for its terms in text or tool
    # output alike, the group's limit for a part of a crowded group; two statements
    # first, then at most three per batch of groups.
    for (_, _, queries), rows in limited:
        assert all(limit <= max(2 * 4, search_levels.KNOWN_ROWS) + 1 for _, _, limit in queries)
        assert all(len(r) <= limit for r, (_, _, limit) in zip(rows, queries, strict=True))
    assert len(limited) <= 2 + 3 * -(-7 // search_levels._BATCH)  # 7 combinations of 3 terms
    # "listen" is rare: its few rows are read first, and the three terms together
    # are found among them (one index seek per row), never walked.
    asked = [match for (_, _, queries), _ in limited for match, _, _ in queries]
    together = [m for m in asked if '"port" AND "api" AND "listen"' in m]
    assert together == []
    await session.close()


@pytest.mark.postgres_only("counts PostgreSQL statements (the SQLite bound is the test above)")
async def test_postgres_answers_rare_combinations_in_one_statement(
    db_path: str, pool: StorePool, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnesis.store.postgres import newest, relevance, term_counts

    session = await new_session(db_path, pool)
    for index in range(30):
        await session.record(f"the port {index} is busy", f"the api {index} answered")
    await session.record("the api will listen on port 8443", "noted")
    statements: list[str] = []

    def counting(function: Callable[..., Any]) -> Callable[..., Any]:
        async def counted(conn: Any, sql: str, args: Any = ()) -> Any:
            statements.append(sql)
            return await function(conn, sql, args)

        return counted

    for module in (relevance, newest, term_counts):
        for name in {"fetch", "fetch_one"} & set(vars(module)):
            monkeypatch.setattr(module, name, counting(getattr(module, name)))
    query = SearchQuery(
        any_of=(Term.word("port"), Term.word("api"), Term.word("listen")),
        relevance=True,
        group_limit=4,
    )
    hits = await session.store.search_text(
        query=query, scope="messages", where=SearchFilter(session_ids=[session.id]), limit=10
    )
    assert "the api will listen on port 8443" in [h.text for h in hits][:1]
    # Term counts with the rows searched, then one statement for the batch: every
    # part of every combination has fewer GIN candidates than the cap, so none is
    # asked again (no window, no per-combination GIN walk).
    assert len(statements) == 2, statements
    assert "UNION ALL" in statements[1]
    await session.close()


def test_synonyms_and_latest_state_are_read_from_the_question() -> None:
    parsed = parse_query("how often does the staging DB password get rotated these days?")
    assert Term((("db",), ("database",), ("databases",))) in parsed.optional
    assert parsed.latest
    assert not parse_query("which port did we settle on for the API?").latest


def test_sqlite_near_groups_are_quoted(tmp_path: Any) -> None:
    expression = sqlite_search._near((Term.word('a"b'), Term.word("port")))
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    conn.execute("INSERT INTO t VALUES ('a\"b port')")
    assert conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expression,)).fetchone() == (1,)
