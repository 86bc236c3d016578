"""A ``newest_first`` search reads a window of the scope's newest rows before asking
the GIN index: the results must be the GIN path's, row for row, whatever the window.

No windows force the GIN index for every group; a window larger than the database
forces the window for every group (it is the whole scope, never full). The small
windows in between leave common words to the first window, less common ones to the
second and rare ones to the index, with every scope (sessions, time range, lineage)
cutting the windows differently.
"""

from __future__ import annotations

import random

import psycopg
import pytest

from mnesis.models.parts import TextPart, ToolPart
from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.postgres import PostgresStore
from mnesis.store.records import NewMessage
from mnesis.store.search_query import SearchQuery, Term
from tests.store.contract.helpers import T0, make_commit, make_message, message_items, new_session

pytestmark = pytest.mark.postgres

WINDOWS = ((1,), (3,), (2, 25), (8, 90), (25, 60), (1_000_000,))
"""Window sizes compared with the GIN path (none); the last holds the whole database."""
_COMMON = ("alpha", "beta", "gamma")
_WORDS = ("delta", "omega", "kappa", "sigma")


def _text(rng: random.Random, i: int) -> str:
    words = [w for w, share in zip(_COMMON, (0.9, 0.45, 0.2), strict=True) if rng.random() < share]
    words += rng.sample(_WORDS, 2)
    if i % 37 == 5:
        words.append("zebra crossing")  # rare: a handful of matches, mostly old
    if i % 11 == 0:
        words.append("user asked")
    return " ".join(words) or "nothing"


def _w(*words: str) -> tuple[Term, ...]:
    return tuple(Term.word(w) for w in words)


def _queries() -> dict[str, SearchQuery]:
    """The shapes the retrieval engine sends (graded levels, context) and single groups."""
    levels = {"newest_first": True, "group_limit": 4, "descending": True}
    return {
        "levels, context": SearchQuery(
            any_of=_w("alpha", "beta", "zebra", "kappa"), include_context=True, **levels
        ),
        "levels, rare first": SearchQuery(
            all_of=_w("zebra"), any_of=_w("alpha", "gamma"), include_context=True, **levels
        ),
        "levels, own text": SearchQuery(any_of=_w("beta", "gamma", "sigma"), **levels),
        "speaker words": SearchQuery(
            all_of=_w("user"), any_of=_w("asked", "beta"), include_context=True, **levels
        ),
        "context only": SearchQuery(
            all_of=_w("gamma"), context_only=True, newest_first=True, group_limit=3
        ),
        "common word": SearchQuery(all_of=_w("alpha"), newest_first=True, group_limit=5),
        "rare phrase": SearchQuery(
            all_of=(Term.phrase("zebra", "crossing"),), newest_first=True, group_limit=2
        ),
        "excluded": SearchQuery(
            all_of=_w("alpha"), not_all_of=_w("beta"), newest_first=True, group_limit=3
        ),
        "no group limit": SearchQuery(any_of=_w("omega", "zebra"), newest_first=True),
    }


async def _history(store: PostgresStore) -> tuple[list[str], str]:
    """Three interleaved sessions of 150 messages in all (some with tool output), one
    compaction in the first; the session ids and the summary id."""
    rng = random.Random(16)
    sessions = [await new_session(store) for _ in range(3)]
    batch: list[NewMessage] = []
    for i in range(150):
        sid = sessions[rng.choice((0, 0, 1, 2))]
        message = make_message(sid, "user" if i % 2 == 0 else "assistant")
        message.created_at = T0 + i * 1000
        parts: list[TextPart | ToolPart] = [TextPart(text=_text(rng, i))]
        if i % 7 == 3:
            parts.append(ToolPart(tool_name="bash", tool_call_id=f"c{i}", output=_text(rng, i + 1)))
        batch.append(NewMessage(message, parts))
        if len(batch) == 10:
            await store.append_messages(batch)
            batch = []
    items = await message_items(store, sessions[0])
    commit = make_commit(sessions[0], items[3:40], content="alpha beta zebra summary")
    await store.commit_compaction(commit)
    return sessions, commit.summary.id


def _scopes(sessions: list[str], summary: str) -> dict[str, SearchFilter]:
    return {
        "everything": SearchFilter(),
        "one session": SearchFilter(session_ids=[sessions[1]]),
        "two sessions": SearchFilter(session_ids=[sessions[0], sessions[2]]),
        "since": SearchFilter(since=T0 + 60_000),
        "until": SearchFilter(until=T0 + 90_000),
        "session and range": SearchFilter(
            session_ids=[sessions[0]], since=T0 + 20_000, until=T0 + 120_000
        ),
        "under a summary": SearchFilter(under_summary=summary),
    }


def _rows(hits: list[SearchHit]) -> list[tuple[str, str, str | None, int | None]]:
    return [(h.kind, h.id, h.part_id, h.key) for h in hits]


async def _search(
    store: PostgresStore,
    windows: tuple[int, ...],
    query: SearchQuery,
    scope: SearchFilter,
    pool: str,
    page: tuple[int, int],
) -> list[tuple[str, str, str | None, int | None]]:
    store.search.search_windows = windows
    hits = await store.search_text(
        query=query,
        scope=pool,  # type: ignore[arg-type]
        where=scope,
        limit=page[0],
        offset=page[1],
    )
    return _rows(hits)


async def test_window_and_gin_paths_give_the_same_rows(
    pg_store: PostgresStore, raw: psycopg.Connection
) -> None:
    sessions, summary = await _history(pg_store)
    raw.execute("ANALYZE")  # The table's row estimate decides when a second window pays.
    compared = 0
    for pool in ("messages", "summaries"):
        for scope_name, scope in _scopes(sessions, summary).items():
            for query_name, query in _queries().items():
                for page in ((40, 0), (6, 4)):
                    expected = await _search(pg_store, (), query, scope, pool, page)
                    for windows in WINDOWS:
                        got = await _search(pg_store, windows, query, scope, pool, page)
                        assert got == expected, (pool, scope_name, query_name, page, windows)
                    compared += bool(expected)
    # Most combinations find something (the comparison is not between empty lists).
    assert compared >= 80


async def test_a_match_just_outside_the_window_is_found(pg_store: PostgresStore) -> None:
    """The window holds fewer matches than the group needs: the older ones come from
    the index, not from nowhere."""
    sid = await new_session(pg_store)
    texts = ["heron rare"] + ["heron"] * 2 + ["filler"] * 6 + ["heron"]
    batch = [NewMessage(make_message(sid), [TextPart(text=t)]) for t in texts]
    appended = await pg_store.append_messages(batch)
    query = SearchQuery(all_of=_w("heron"), newest_first=True, group_limit=3)
    for windows in ((), (2,), (5,), (2, 5), (1_000_000,)):
        pg_store.search.search_windows = windows
        hits = await pg_store.search_text(
            query=query, scope="messages", where=SearchFilter(session_ids=[sid]), limit=10
        )
        newest = [appended[i].message_id for i in (9, 2, 1)]
        # More than group_limit matches: the newest 3, then the oldest one.
        assert [h.id for h in hits] == [*newest, appended[0].message_id], windows
