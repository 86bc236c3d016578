"""SQLite: the neighbour context a search hit carries is the one its part was indexed
with (rebuilt at query time, not read from a stored column)."""

from __future__ import annotations

from pathlib import Path

from mnesis.models.ids import new_id
from mnesis.store import ImmutableStore, StorePool
from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.search_query import SearchQuery, Term
from tests.store.sqlite.history import indexed_as_rebuilt, random_history


async def _hits(store: ImmutableStore, sessions: list[str]) -> list[SearchHit]:
    query = SearchQuery(any_of=tuple(Term.word(w) for w in ("alpha", "beta", "late", "zeta")))
    hits: list[SearchHit] = []
    for sid in sessions:
        where = SearchFilter(session_ids=[sid])
        for newest in (False, True):
            q = SearchQuery(any_of=query.any_of, newest_first=newest)
            hits += await store.search_text(query=q, scope="messages", where=where, limit=400)
    return hits


async def test_a_hit_carries_the_context_its_part_was_indexed_with(
    tmp_path: Path, pool: StorePool
) -> None:
    path = str(tmp_path / "hits.db")
    sessions = [new_id("sess") for _ in range(3)]
    await random_history(path, sessions, 250, 23, max_words=80)
    store = await pool.acquire(db_path=path)
    try:
        hits = await _hits(store, sessions)
        ids = [m.message.id for sid in sessions for m in await store.get_messages(sid)]
        replies = await store.replies_to(ids)
    finally:
        await store.close()
    # What the writer indexed is what history rebuilds, part for part.
    expected = indexed_as_rebuilt(path, sessions)
    with_context = [h for h in [*hits, *replies.values()] if h.context is not None]
    assert len(with_context) > 200
    assert sum(1 for h in with_context if "\n" in (h.context or "")) > 100
    for hit in [*hits, *replies.values()]:
        assert hit.context == expected[hit.key], hit
