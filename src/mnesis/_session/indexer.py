"""Background semantic indexing: a session with ``RetrievalConfig.semantic`` keeps its
vectors filled after each turn, so ``grep`` does not pay for embedding.

When a message of the session is stored (or a compaction adds summaries), one task
waits ``IDLE_SECONDS`` for the turn's writes to settle, then indexes the session
(what ``RetrievalEngine.index_semantic`` does) in passes of at most ``PASS_SECONDS``
until one completes. The model runs in a worker thread, so the event loop (and the
next turn) never waits for it; a failure is logged and ends that round, never a
turn. A round reads only the rows stored since the last one (see the marks of
:mod:`mnesis.retrieval.semantic.index`), so its store work does not grow with the
session's history. Closing the session stops the task. Nothing runs without the ``semantic``
extra or on a store that keeps no vectors.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mnesis.errors import StoreReadOnlyError
from mnesis.events.bus import EventBus, EventHandler, MnesisEvent
from mnesis.retrieval.engine import RetrievalEngine
from mnesis.retrieval.semantic.index import index_pending
from mnesis.retrieval.semantic.model import available, load_embedder

__all__ = ["IDLE_SECONDS", "PASS_SECONDS", "SemanticIndexer"]

_log = logging.getLogger("mnesis.retrieval")

IDLE_SECONDS = 0.2
"""Wait after the last write before embedding (a turn stores several messages)."""
PASS_SECONDS = 2.0
"""Longest single ``index_semantic`` pass; the task yields between passes."""


class SemanticIndexer:
    """Embeds a session's new texts in the background (see the module docstring)."""

    def __init__(self, retrieval: RetrievalEngine, bus: EventBus) -> None:
        self._retrieval = retrieval
        self._bus = bus
        self._session_id = retrieval.session_id
        self._task: asyncio.Task[None] | None = None
        self._dirty = False
        self._stopped = False

    @classmethod
    def attach(cls, retrieval: RetrievalEngine, bus: EventBus) -> SemanticIndexer | None:
        """An indexer listening on ``bus``, when semantic recall is on, installed and
        backed by a store that keeps vectors; otherwise None."""
        if not retrieval.config.semantic or retrieval.store.vectors is None or not available():
            return None
        indexer = cls(retrieval, bus)
        for event, handler in indexer._handlers():
            bus.subscribe(event, handler)
        return indexer

    def _handlers(self) -> list[tuple[MnesisEvent, EventHandler]]:
        return [
            (MnesisEvent.MESSAGE_CREATED, self._on_write),
            (MnesisEvent.COMPACTION_COMPLETED, self._on_write),
            (MnesisEvent.SESSION_CLOSED, self._on_closed),
        ]

    @property
    def running(self) -> bool:
        """Whether a round of indexing is scheduled or under way."""
        return self._task is not None and not self._task.done()

    async def idle(self) -> None:
        """Wait until the texts stored so far have been indexed (or a round failed)."""
        while (task := self._task) is not None and not task.done():
            await asyncio.wait({task})

    async def stop(self) -> None:
        """Stop indexing for good (the texts left wait for ``grep`` or a later session)."""
        self._stopped = True
        for event, handler in self._handlers():  # a bus shared by sessions outlives this one
            self._bus.unsubscribe(event, handler)
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _on_write(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        if self._stopped or payload.get("session_id") != self._session_id:
            return
        self._dirty = True
        if not self.running:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._task = loop.create_task(self._run(), name="mnesis-semantic-index")

    async def _on_closed(self, event: MnesisEvent, payload: dict[str, Any]) -> None:
        if payload.get("session_id") == self._session_id:
            await self.stop()

    async def _run(self) -> None:
        try:
            while self._dirty:
                self._dirty = False
                await asyncio.sleep(IDLE_SECONDS)
                await self._index_all()
        except StoreReadOnlyError:  # a read-only file: grep searches what it has
            self._stopped = True
        except Exception:
            _log.exception("background semantic indexing of %s failed", self._session_id)

    async def _index_all(self) -> None:
        """Passes of at most ``PASS_SECONDS`` until one completes; each ends in an
        await, so other tasks run between them."""
        store = self._retrieval.store
        vectors = store.vectors
        if vectors is None:
            return
        embedder = await asyncio.to_thread(load_embedder)
        sessions = [self._session_id]
        while True:
            report = await index_pending(
                store, vectors, embedder, sessions, budget_seconds=PASS_SECONDS
            )
            if report.complete:
                return
