"""When compaction runs around a turn: before the model call if the context is over the
hard threshold, in the background after the turn if it is over the soft one (or, in
``compaction.mode = "worker"``, through a job for the workers: ``handoff``)."""

from __future__ import annotations

from mnesis._session.handoff import WorkerHandoff
from mnesis._session.meter import ContextMeter
from mnesis.compaction.engine import CompactionEngine
from mnesis.config import MnesisConfig
from mnesis.models.message import CompactionResult
from mnesis.models.model_info import ModelInfo

__all__ = ["CompactionGate"]


class CompactionGate:
    """Decides, from the context meter, when one session's compaction engine runs."""

    def __init__(
        self,
        engine: CompactionEngine,
        meter: ContextMeter,
        config: MnesisConfig,
        model_info: ModelInfo,
        session_id: str,
    ) -> None:
        self._engine = engine
        self._meter = meter
        self._config = config
        self._model_info = model_info
        self._session_id = session_id
        queue = engine.store.compaction_queue() if config.compaction.mode == "worker" else None
        self._handoff = (
            None
            if queue is None
            else WorkerHandoff(queue, engine, meter, config, model_info, session_id)
        )

    async def before_model_call(self) -> CompactionResult | None:
        """Compact now if the context is over the hard threshold (waiting for a running
        compaction first); returns what compaction brought it under the limit, if any."""
        if self._meter.stale:
            await self._meter.refresh()
        if not self._config.compaction.auto:
            return None
        if not self._over_hard_limit():
            return None
        if self._handoff is not None and self._handoff.available:
            return await self._handoff.before_model_call()
        if self._engine.in_progress:
            await self._engine.wait_for_pending()
            await self._meter.refresh()
            if not self._over_hard_limit():
                return self._engine.last_result
        result = await self._engine.run_compaction(self._session_id)
        await self._meter.refresh()
        return result

    async def after_turn(self) -> bool:
        """Start a background compaction if the soft threshold is crossed; True if started."""
        if self._meter.stale and not self._engine.in_progress:
            await self._meter.refresh()
        if not self._config.compaction.auto:
            return False
        if self._handoff is not None and self._handoff.available:
            return await self._handoff.after_turn()
        return self._engine.check_and_trigger(
            self._session_id, self._meter.view_tokens, self._model_info
        )

    async def compact_now(self) -> CompactionResult:
        """A forced compaction, after any running one finishes."""
        await self._engine.wait_for_pending()
        result = await self._engine.run_compaction(self._session_id, force=True)
        await self._meter.refresh()
        return result

    def _over_hard_limit(self) -> bool:
        return self._engine.is_hard_overflow(self._meter.view_tokens, self._model_info)
