"""The ``semantic`` extra: vectors stored next to the rows, incremental indexing, hybrid grep."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool, ToolPart
from mnesis.config import RetrievalConfig, StoreConfig
from mnesis.retrieval import RetrievalEngine
from mnesis.retrieval.semantic import MODEL_ID, available
from mnesis.retrieval.semantic.index import index_pending
from mnesis.retrieval.semantic.model import DIM, load_embedder
from mnesis.retrieval.semantic.search import dense_search
from mnesis.store.immutable import ImmutableStore
from mnesis.store.readonly import open_read_only
from mnesis.store.vectors import VectorStore
from tests.store.contract.helpers import append_text, make_commit, new_session

FACT = "Amara's kids start at the Riverside school in September"
QUESTION = "which school will Amara's children go to"
FILLER = [
    "the billing dashboard looks fine today",
    "can someone review the ledger pull request",
    "lunch order is in, the noodle place again",
    "reminder: retro for payouts on Thursday",
    "the build for search is green again",
]


async def _session(db_path: str, pool: StorePool, *, semantic: bool = True) -> MnesisSession:
    return await MnesisSession.create(
        model="fake/m",
        db_path=db_path,
        pool=pool,
        config=MnesisConfig(retrieval=RetrievalConfig(semantic=semantic)),
    )


def _vectors(store: ImmutableStore) -> VectorStore:
    vectors = store.vectors
    assert vectors is not None
    return vectors


async def _stored(store: ImmutableStore, session_id: str) -> dict[str, int]:
    vectors = _vectors(store)
    counts: dict[str, int] = {}
    for kind in ("message", "summary"):
        rows = await vectors.scan(session_id, MODEL_ID, kind, after_key=0, limit=10_000)
        counts[kind] = len(rows)
    return counts


def test_the_extra_is_installed_with_dev_and_loads_offline() -> None:
    assert available()
    embedder = load_embedder()
    vectors = embedder.embed([FACT, QUESTION, FILLER[0], ""])
    assert vectors.shape == (4, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # A paraphrase is closer than an unrelated turn; the same text gives the same vector.
    assert vectors[0] @ vectors[1] > vectors[2] @ vectors[1] + 0.2
    assert np.allclose(embedder.embed([FACT])[0], vectors[0], atol=1e-5)


async def test_texts_and_summaries_get_vectors_incrementally_and_tool_output_none(
    db_path: str, pool: StorePool
) -> None:
    session = await _session(db_path, pool)
    await session.record(FACT, "Noted, thanks.")
    await session.record(
        "check the logs",
        [
            ToolPart(
                tool_name="bash",
                tool_call_id="call_1",
                input={"command": "tail log"},
                output="WARN school timeout " * 50,
            )
        ],
    )
    engine = RetrievalEngine(session.store, session.id)
    assert await _stored(session.store, session.id) == {"message": 0, "summary": 0}
    assert await engine.index_semantic() == 3  # two user turns and one reply, no tool output
    assert await engine.index_semantic() == 0
    for text in FILLER[:2]:
        await session.record(text, "ok")
    assert await engine.index_semantic() == 4
    assert await _stored(session.store, session.id) == {"message": 7, "summary": 0}
    await session.close()


async def test_summaries_are_embedded_and_found(db_path: str, pool: StorePool) -> None:
    session = await MnesisSession.create(
        model="fake/m",
        db_path=db_path,
        pool=pool,
        config=MnesisConfig(
            retrieval=RetrievalConfig(semantic=True),
            model_overrides={"context_limit": 8_000, "max_output_tokens": 1_000},
        ),
    )
    await session.record(FACT, "Noted, thanks.")
    for index in range(60):
        await session.record(f"{FILLER[index % 5]} " + "detail " * 30, "ok " * 30)
    await session.compaction_engine.wait_for_pending()
    await session.compact()
    engine = RetrievalEngine(session.store, session.id, config=RetrievalConfig(semantic=True))
    await engine.index_semantic()
    assert (await _stored(session.store, session.id))["summary"] >= 1
    found = await engine.grep("Riverside school children", scope="summaries")
    assert found.matches and found.matches[0].kind == "summary"
    assert {m.found_by for m in found.matches} <= {"lexical", "semantic", "both"}
    await session.close()


async def test_a_time_budget_bounds_the_catch_up_and_a_later_call_finishes(
    db_path: str, pool: StorePool
) -> None:
    # semantic=False: no background indexing, the vectors stay for this test to fill.
    session = await _session(db_path, pool, semantic=False)
    for text in FILLER * 60:
        await session.record(text, "ok")
    vectors = _vectors(session.store)
    embedder = load_embedder()
    partial = await index_pending(
        session.store, vectors, embedder, [session.id], budget_seconds=0.0
    )
    assert partial.embedded == 0 and not partial.complete
    full = await index_pending(session.store, vectors, embedder, [session.id])
    assert full.embedded == 600 and full.complete
    await session.close()


async def test_hybrid_grep_finds_a_paraphrase_and_says_which_path_found_it(
    db_path: str, pool: StorePool
) -> None:
    session = await _session(db_path, pool)
    fact = await session.record(FACT, "Noted, thanks.")
    for text in FILLER * 4:
        await session.record(text, "ok")
    await session.record("the Riverside office is closed on Friday", "ok")
    found = await session.grep(QUESTION, scope="messages", limit=5)
    assert found.matches[0].id == fact.user_message_id
    assert found.matches[0].found_by in ("semantic", "both")
    by_path = {m.found_by for m in found.matches}
    assert by_path <= {"lexical", "semantic", "both"}
    # The agent sees the path in the tool's JSON.
    as_tool = json.loads(await session.execute_tool("lcm_grep", {"query": QUESTION}))
    assert as_tool["matches"][0]["found_by"] in ("semantic", "both")
    # Without the flag nothing is embedded and grep stays lexical.
    plain = RetrievalEngine(session.store, session.id)
    assert {m.found_by for m in (await plain.grep(QUESTION)).matches} == {"lexical"}
    await session.close()


async def test_nothing_is_embedded_unless_enabled(db_path: str, pool: StorePool) -> None:
    session = await _session(db_path, pool, semantic=False)
    await session.record(FACT, "Noted, thanks.")
    await session.grep(QUESTION)
    assert await _stored(session.store, session.id) == {"message": 0, "summary": 0}
    await session.close()


async def test_dense_hits_respect_time_range_scope_and_the_open_question(
    db_path: str, pool: StorePool
) -> None:
    session = await _session(db_path, pool)
    other = await _session(db_path, pool)
    fact = await session.record(FACT, "Noted, thanks.")
    await other.record("Amara's children go to the Riverside school", "ok")
    for text in FILLER:
        await session.record(text, "ok")
    stored = await session.store.get_message(fact.user_message_id)
    before = await session.grep(QUESTION, until=stored.message.created_at)
    assert fact.user_message_id not in [m.id for m in before.matches]
    found = await session.grep(QUESTION)
    assert all(m.session_id == session.id for m in found.matches)
    # The newest, unanswered user turn is never a hit, on either path.
    asked = await session.record(
        QUESTION + "?",
        [
            ToolPart(
                tool_name="lcm_grep",
                tool_call_id="call_1",
                input={"query": QUESTION},
                output="1 match",
            )
        ],
    )
    ids = [m.id for m in (await session.grep(QUESTION)).matches]
    assert asked.user_message_id not in ids and ids[0] == fact.user_message_id
    await session.close()
    await other.close()


async def test_pages_of_a_hybrid_grep_do_not_repeat_hits(db_path: str, pool: StorePool) -> None:
    session = await _session(db_path, pool)
    for index in range(30):
        await session.record(f"{FILLER[index % 5]} (note {index})", f"reply {index}")
    first = await session.grep("who reviews the ledger dashboard", limit=5)
    assert first.next_cursor is not None
    second = await session.grep(
        "who reviews the ledger dashboard", limit=5, cursor=first.next_cursor
    )
    ids = [m.id for m in first.matches] + [m.id for m in second.matches]
    assert len(ids) == len(set(ids))
    await session.close()


@pytest.mark.parametrize("cache_bytes", [0, 2**20], ids=["streamed", "cached"])
async def test_dense_search_is_the_same_streamed_in_chunks_or_cached_and_refreshed(
    db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch, cache_bytes: int
) -> None:
    from mnesis.retrieval.semantic import search

    monkeypatch.setattr(search, "CHUNK", 7)
    monkeypatch.setattr(search, "CACHE_BYTES", cache_bytes)
    session = await _session(db_path, pool)
    fact = await session.record(FACT, "Noted, thanks.")
    for text in FILLER * 4:
        await session.record(text, "ok")
    embedder = load_embedder()
    vectors = _vectors(session.store)
    await index_pending(session.store, vectors, embedder, [session.id])
    where = session.store.location

    async def top(query: str, k: int) -> list[search.DenseHit]:
        vector = embedder.embed([query])[0]
        return await dense_search(
            vectors, MODEL_ID, vector, [session.id], ["message"], k, location=where
        )

    hits = await top(QUESTION, 3)
    assert len(hits) == 3 and hits[0].id == fact.user_message_id
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # Vectors stored after the first search are found by the next one.
    later = await session.record("Omar bought a used Volvo estate for the commute", "nice")
    await index_pending(session.store, vectors, embedder, [session.id])
    assert (await top("what car did Omar purchase", 1))[0].id == later.user_message_id
    await session.close()


async def test_a_purge_removes_the_vectors_of_texts_and_summaries(
    db_path: str, pool: StorePool
) -> None:
    store = await pool.acquire(db_path=db_path)
    doomed = await new_session(store)
    kept = await new_session(store)
    for session_id in (doomed, kept):
        for index in range(4):
            await append_text(store, session_id, f"{FILLER[index]} ({session_id})")
        items = await store.get_context_items(session_id)
        await store.commit_compaction(make_commit(session_id, items[:2], content=FACT))
    await index_pending(store, _vectors(store), load_embedder(), [doomed, kept])
    assert await _stored(store, doomed) == {"message": 4, "summary": 1}
    await store.purge_session(doomed)
    assert await _stored(store, doomed) == {"message": 0, "summary": 0}
    assert await _stored(store, kept) == {"message": 4, "summary": 1}
    await store.close()


async def test_a_read_only_store_searches_the_vectors_it_has(db_path: str, pool: StorePool) -> None:
    session = await _session(db_path, pool)
    fact = await session.record(FACT, "Noted, thanks.")
    await RetrievalEngine(session.store, session.id).index_semantic()
    await session.record("Omar bought a used Volvo estate for the commute", "nice")
    await session.close()
    await pool.close_all()
    store = await open_read_only(StoreConfig(db_path=db_path))
    engine = RetrievalEngine(store, session.id, config=RetrievalConfig(semantic=True))
    found = await engine.grep(QUESTION)
    assert found.matches[0].id == fact.user_message_id
    assert found.matches[0].found_by in ("semantic", "both")
    await store.close()
