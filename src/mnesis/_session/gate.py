"""When compaction runs around a turn: before the model call if the context is over the
hard threshold, in the background after the turn if it is over the soft one (or, in
``compaction.mode = "worker"``, through a job for the workers: ``handoff``)."""

from __future__ import annotations

from mnesis._session.handoff import WorkerHandoff
from mnesis._session.target import SessionCompaction
from mnesis.config import CompactionConfig
from mnesis.models.message import CompactionResult

__all__ = ["CompactionGate"]


class CompactionGate:
    """Decides, from the context meter, when one session's compaction engine runs."""

    def __init__(self, target: SessionCompaction, config: CompactionConfig) -> None:
        self._target = target
        self._engine = target.engine
        self._meter = target.meter
        self._config = config
        queue = self._engine.store.compaction_queue() if config.mode == "worker" else None
        self._handoff = None if queue is None else WorkerHandoff(queue, target, config)

    async def before_model_call(self) -> CompactionResult | None:
        """Compact now if the context is over the hard threshold (waiting for a running
        compaction first); returns what compaction brought it under the limit, if any."""
        if self._meter.stale:
            await self._meter.refresh()
        if not self._config.auto:
            return None
        if not self._target.over_hard_limit():
            return None
        if self._handoff is not None and self._handoff.available:
            return await self._handoff.before_model_call()
        if self._engine.in_progress:
            await self._engine.wait_for_pending()
            await self._meter.refresh()
            if not self._target.over_hard_limit():
                return self._engine.last_result
        return await self._target.run_inline()

    async def after_turn(self) -> bool:
        """Start a background compaction if the soft threshold is crossed; True if started."""
        if self._meter.stale and not self._engine.in_progress:
            await self._meter.refresh()
        if not self._config.auto:
            return False
        if self._handoff is not None and self._handoff.available:
            return await self._handoff.after_turn()
        target = self._target
        return self._engine.check_and_trigger(
            target.session_id, self._meter.view_tokens, target.model_info
        )

    async def compact_now(self) -> CompactionResult:
        """A forced compaction, after any running one finishes."""
        await self._engine.wait_for_pending()
        return await self._target.run_inline(force=True)
