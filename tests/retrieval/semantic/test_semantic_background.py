"""Background semantic indexing: a session with ``RetrievalConfig.semantic`` embeds its
turns after they are stored, so ``grep`` finds paraphrases without embedding anything."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from mnesis import MnesisConfig, MnesisSession, StorePool
from mnesis._session.indexer import SemanticIndexer
from mnesis.config import RetrievalConfig
from mnesis.events.bus import EventBus, MnesisEvent
from mnesis.retrieval.semantic import MODEL_ID
from mnesis.retrieval.semantic import index as semantic_index
from mnesis.retrieval.semantic.model import load_embedder

FACT = "Amara's kids start at the Riverside school in September"
QUESTION = "where will the young ones be educated"
"""Shares no word with ``FACT``: only the dense path can find it."""
FILLER = [
    "the billing dashboard looks fine today",
    "can someone review the ledger pull request",
    "lunch order is in, the noodle place again",
    "reminder: retro for payouts on Thursday",
]


async def _session(db_path: str, pool: StorePool) -> MnesisSession:
    # semantic_index_seconds=0: grep itself embeds nothing, whatever is missing.
    config = MnesisConfig(retrieval=RetrievalConfig(semantic=True, semantic_index_seconds=0))
    return await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool, config=config)


def _indexer(session: MnesisSession) -> SemanticIndexer:
    indexer = session._wiring.indexer
    assert indexer is not None, "semantic sessions index in the background"
    return indexer


async def _record_turns(session: MnesisSession) -> str:
    await session.record(FILLER[0], FILLER[1])
    fact = await session.record(FACT, "noted")
    await session.record(FILLER[2], FILLER[3])
    return fact.user_message_id


async def test_after_turns_a_paraphrase_is_found_by_the_dense_path_without_grep_indexing(
    db_path: str, pool: StorePool
) -> None:
    session = await _session(db_path, pool)
    fact_id = await _record_turns(session)
    await _indexer(session).idle()
    vectors = session.store.vectors
    assert vectors is not None
    assert await vectors.count(session.id, MODEL_ID, "message") == 6
    found = await session.grep(QUESTION, scope="messages", limit=5)
    by_id = {m.id: m for m in found.matches}
    assert fact_id in by_id
    assert by_id[fact_id].found_by == "semantic"
    await session.close()


async def test_without_the_background_pass_the_same_grep_has_no_dense_hit(
    db_path: str, pool: StorePool
) -> None:
    session = await _session(db_path, pool)
    await _indexer(session).stop()
    fact_id = await _record_turns(session)
    found = await session.grep(QUESTION, scope="messages", limit=5)
    assert fact_id not in {m.id for m in found.matches}
    assert all(m.found_by == "lexical" for m in found.matches)
    await session.close()


async def test_turns_never_wait_for_the_embedding(
    db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = load_embedder()
    entered, release = threading.Event(), threading.Event()
    embed = embedder.embed

    def held(texts: Sequence[str]) -> Any:
        entered.set()
        release.wait(timeout=60)
        return embed(texts)

    monkeypatch.setattr(embedder, "embed", held)
    session = await _session(db_path, pool)
    await session.record(FACT, "noted")
    assert await asyncio.to_thread(entered.wait, 60), "the first round reached the model"
    await session.record(FILLER[0], FILLER[1])  # while that model call is held
    indexer = _indexer(session)
    assert indexer.running
    vectors = session.store.vectors
    assert vectors is not None
    assert await vectors.count(session.id, MODEL_ID, "message") == 0
    release.set()
    await indexer.idle()
    assert await vectors.count(session.id, MODEL_ID, "message") == 4
    await session.close()


async def test_a_failing_index_pass_is_logged_and_never_fails_a_turn(
    db_path: str, pool: StorePool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("embedding broke")

    monkeypatch.setattr(semantic_index, "embedded_text", broken)
    session = await _session(db_path, pool)
    with caplog.at_level(logging.ERROR, logger="mnesis.retrieval"):
        await session.record(FACT, "noted")
        await _indexer(session).idle()
        turn = await session.record(FILLER[0], FILLER[1])
        await _indexer(session).idle()
    assert turn.user_message_id
    failures = [r for r in caplog.records if "background semantic indexing" in r.getMessage()]
    assert len(failures) == 2
    assert len(await session.messages()) == 4
    await session.close()


async def test_closing_the_session_stops_the_indexer(db_path: str, pool: StorePool) -> None:
    session = await _session(db_path, pool)
    await session.record(FACT, "noted")
    indexer = _indexer(session)
    assert indexer.running
    await session.close()
    assert not indexer.running


async def test_sessions_without_semantic_recall_have_no_indexer(
    db_path: str, pool: StorePool
) -> None:
    session = await MnesisSession.create(model="fake/m", db_path=db_path, pool=pool)
    assert session._wiring.indexer is None
    await session.close()


async def test_a_closed_session_leaves_a_shared_bus(db_path: str, pool: StorePool) -> None:
    bus = EventBus()
    config = MnesisConfig(retrieval=RetrievalConfig(semantic=True))
    session = await MnesisSession.create(
        model="fake/m", db_path=db_path, pool=pool, config=config, event_bus=bus
    )
    indexer = _indexer(session)
    await session.close()
    bus.publish(MnesisEvent.MESSAGE_CREATED, {"session_id": session.id})
    assert not indexer.running
    handlers = bus._handlers.get(MnesisEvent.MESSAGE_CREATED, [])
    assert all(getattr(h, "__self__", None) is not indexer for h in handlers)
