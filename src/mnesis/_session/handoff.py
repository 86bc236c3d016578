"""Worker mode (``compaction.mode = "worker"``): a session hands its compactions to workers.

Over the soft threshold the session queues a compaction job (at most one per session:
the queue's locks) instead of compacting in the background itself. Over the hard
threshold the turn waits: for the job to be taken and committed, or, when no worker has
taken it within ``worker_pickup_seconds``, it compacts inline (the queued job then finds
the session under its threshold and does nothing). When the store has no job queue
(SQLite, or a database without the queue schema) the session compacts in-process.
"""

from __future__ import annotations

import asyncio
import logging
import time

from mnesis._session.target import SessionCompaction
from mnesis.config import CompactionConfig
from mnesis.errors import MnesisStoreError
from mnesis.events.bus import MnesisEvent
from mnesis.models.message import CompactionResult
from mnesis.store.jobs import CompactionQueue

__all__ = ["WorkerHandoff"]

logger = logging.getLogger("mnesis.compaction")

POLL_SECONDS = 0.25
"""How often a turn waiting for a worker looks at the job."""


class WorkerHandoff:
    """Queues one session's compactions for workers and waits for them when it must."""

    def __init__(
        self, queue: CompactionQueue, target: SessionCompaction, config: CompactionConfig
    ) -> None:
        self._queue = queue
        self._target = target
        self._meter = target.meter
        self._config = config
        self._session_id = target.session_id
        self._pending = False
        self._broken = False

    @property
    def available(self) -> bool:
        """False once the queue failed (the session then compacts in-process)."""
        return not self._broken

    async def after_turn(self) -> bool:
        """Queue a job if the soft threshold is crossed and none is pending; True if queued."""
        if self._pending and await self._state() is None:
            self._pending = False
            await self._meter.refresh()
        if self._pending or not self._target.over_soft_limit():
            return False
        return await self._request(self._meter.view_tokens)

    async def before_model_call(self) -> CompactionResult | None:
        """Bring a context over the hard threshold under it (see the module docstring);
        the result of an inline compaction, None when a worker's job did it."""
        cfg = self._config
        if await self._request(self._meter.view_tokens):
            started = time.monotonic()
            run_bound = cfg.model_timeout_seconds * 3 + 60
            while not self._broken:
                state = await self._state()
                waited = time.monotonic() - started
                if state is None or (state == "queued" and waited >= cfg.worker_pickup_seconds):
                    break
                if waited >= cfg.worker_pickup_seconds + run_bound:
                    break
                await asyncio.sleep(POLL_SECONDS)
            self._pending = False
            await self._meter.refresh()
            if not self._target.over_hard_limit():
                return None  # a worker compacted: its result is in its job's run row
            logger.info("no worker compacted %s in time; compacting inline", self._session_id)
        return await self._target.run_inline()

    async def _request(self, size: int) -> bool:
        if self._broken:
            return False
        try:
            job_id = await self._queue.request(self._session_id, "threshold")
        except MnesisStoreError as exc:
            self._give_up(exc)
            return False
        self._pending = True
        self._target.engine.bus.publish(
            MnesisEvent.COMPACTION_TRIGGERED,
            {
                "session_id": self._session_id,
                "tokens": size,
                "reason": "soft_threshold",
                "job_id": job_id,
            },
        )
        return True

    async def _state(self) -> str | None:
        try:
            return await self._queue.state(self._session_id)
        except MnesisStoreError as exc:
            self._give_up(exc)
            return None

    def _give_up(self, exc: MnesisStoreError) -> None:
        logger.warning(
            "compaction queue unavailable for %s (%s); compacting in-process",
            self._session_id,
            exc,
        )
        self._broken = True
