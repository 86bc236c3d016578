"""``RetrievalEngine``: describe, grep and expand over any store backend.

This is what makes compaction lossless in practice: whatever a summary hides can
be found (``grep``), inspected (``describe``) and read again (``expand``), back
to the canonical messages, with tombstoned tool outputs shown in full.

The engine is a facade: each operation lives in its own module (``describe``,
``grep`` with ``ranking`` / ``regex_scan`` / ``cursor``, ``expand``), and what a
caller may reach is decided by :class:`~mnesis.retrieval.scope.RetrievalScope`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TypeVar

from mnesis.config import RetrievalConfig
from mnesis.models.message import MessageWithParts
from mnesis.retrieval.describe import describe as _describe
from mnesis.retrieval.expand import expand as _expand
from mnesis.retrieval.expand import source_messages as _source_messages
from mnesis.retrieval.grep import GrepMode, GrepScope
from mnesis.retrieval.grep import grep as _grep
from mnesis.retrieval.results import DescribeResult, ExpandResult, GrepResult
from mnesis.retrieval.scope import RetrievalScope
from mnesis.retrieval.semantic.index import index_pending
from mnesis.retrieval.semantic.model import load_embedder
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["GrepMode", "GrepScope", "RetrievalEngine"]

logger = logging.getLogger("mnesis.retrieval")
T = TypeVar("T")


class RetrievalEngine:
    """Describe, search and expand the history of one session.

    Scope: an engine is bound to one session. Searches cover that session unless the
    caller passes other session IDs, and an engine created with ``allowed_session_ids``
    (as agent tools are) refuses every ID outside that grant; one created with
    ``allowed_summary_ids`` reaches only those summaries and what is under them.
    """

    def __init__(
        self,
        store: ImmutableStore,
        session_id: str,
        *,
        estimator: TokenEstimator | None = None,
        config: RetrievalConfig | None = None,
        allowed_session_ids: Sequence[str] | None = None,
        allowed_summary_ids: Sequence[str] | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.estimator = estimator or TokenEstimator()
        self.config = config or RetrievalConfig()
        self._scope = RetrievalScope(
            store,
            session_id,
            allowed_session_ids=allowed_session_ids,
            allowed_summary_ids=allowed_summary_ids,
        )
        self.observers: list[Callable[[str, float], None]] = []
        """Called with ``("grep" | "expand", milliseconds)`` after each call (metrics)."""

    async def _observed(self, operation: str, work: Awaitable[T]) -> T:
        """``work``'s result; its time goes to :attr:`observers` however it ends."""
        started = time.perf_counter()
        try:
            return await work
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            for observer in self.observers:
                try:
                    observer(operation, elapsed)
                except Exception:
                    logger.exception("retrieval observer failed")

    async def describe(self, object_id: str) -> DescribeResult:
        """Describe a summary (``sum_``), file (``file_`` or content hash) or message (``msg_``).

        Raises ``InvalidArgumentError`` for malformed IDs, a ``NotFoundError`` subclass
        for unknown ones and ``OutOfScopeError`` for IDs of other sessions.
        """
        return await _describe(self.store, self._scope, object_id)

    async def grep(
        self,
        query: str,
        *,
        mode: GrepMode = "full_text",
        scope: GrepScope = "both",
        limit: int | None = None,
        summary_id: str | None = None,
        since: int | float | datetime | None = None,
        until: int | float | datetime | None = None,
        cursor: str | None = None,
        session_ids: Sequence[str] | None = None,
        all_sessions: bool = False,
        include_lcm_tools: bool = False,
    ) -> GrepResult:
        """Search stored messages and/or summaries.

        ``full_text`` matches any of the query's words (stop words dropped), with
        quoted phrases required, in a turn or its neighbour context, and ranks by the
        share of the words each hit covers, then BM25; ``regex`` scans newest first and
        stops at ``regex_timeout_seconds`` with ``timed_out=True`` and a cursor.
        Each match says why it matched (``matched_terms``, ``context_terms``,
        ``context_from``) and how many near-identical hits it stands for
        (``duplicates``). The ``lcm_*`` tools' own inputs and outputs are left out
        unless ``include_lcm_tools``; the unanswered newest user turn is never a hit.
        """
        return await self._observed(
            "grep",
            _grep(
                self.store,
                self._scope,
                self.config,
                query,
                mode=mode,
                target=scope,
                limit=limit,
                summary_id=summary_id,
                since=since,
                until=until,
                cursor=cursor,
                session_ids=session_ids,
                all_sessions=all_sessions,
                include_lcm_tools=include_lcm_tools,
            ),
        )

    async def index_semantic(
        self,
        *,
        session_ids: Sequence[str] | None = None,
        budget_seconds: float | None = None,
    ) -> int:
        """Embed the texts and summaries that have no vector yet; return how many.

        Covers this engine's session (or ``session_ids``, within its grant) until
        done or out of ``budget_seconds``. ``grep`` with ``RetrievalConfig.semantic``
        catches up by itself, for at most ``semantic_index_seconds`` per call; call
        this after an import or as a background task to keep grep fast. The model
        runs in a worker thread. Raises ``MissingDependencyError`` without the
        ``semantic`` extra; returns 0 on a backend that keeps no vectors.
        """
        vectors = self.store.vectors
        if vectors is None:
            return 0
        sessions = self._scope.sessions_for(session_ids, False) or [self.session_id]
        embedder = await asyncio.to_thread(load_embedder)
        report = await index_pending(
            self.store, vectors, embedder, sessions, budget_seconds=budget_seconds
        )
        return report.embedded

    async def expand(
        self,
        summary_id: str,
        *,
        depth: int = 1,
        include_messages: bool = True,
        token_cap: int | None = None,
        cursor: str | None = None,
    ) -> ExpandResult:
        """Child summaries and/or source messages of a summary, breadth first.

        Depth 1 gives a condensed summary's children or a leaf's messages. Output
        is deterministic (lineage order); ``truncated`` is set when ``token_cap``
        cut it, ``next_cursor`` pages on, and ``unexpanded_summary_ids`` says which
        summaries were not opened.
        """
        return await self._observed(
            "expand",
            _expand(
                self.store,
                self._scope,
                self.estimator,
                self.config,
                summary_id,
                depth=depth,
                include_messages=include_messages,
                token_cap=token_cap,
                cursor=cursor,
            ),
        )

    async def source_messages(self, summary_id: str) -> list[MessageWithParts]:
        """Exactly the canonical messages a summary covers, at any depth, in order."""
        return await _source_messages(self.store, self._scope, summary_id)
