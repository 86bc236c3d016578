"""``SessionCompaction``: one session's compaction engine and the meter that says when it
must run, shared by the in-process gate and the worker handoff."""

from __future__ import annotations

from dataclasses import dataclass

from mnesis._session.meter import ContextMeter
from mnesis.compaction.engine import CompactionEngine
from mnesis.models.message import CompactionResult
from mnesis.models.model_info import ModelInfo

__all__ = ["SessionCompaction"]


@dataclass(frozen=True, slots=True)
class SessionCompaction:
    """The compaction of the session ``session_id``, measured by ``meter``."""

    engine: CompactionEngine
    meter: ContextMeter
    model_info: ModelInfo
    session_id: str

    def over_soft_limit(self) -> bool:
        """True if the context view is over the soft threshold (see the engine)."""
        return self.engine.is_soft_overflow(self.meter.view_tokens, self.model_info)

    def over_hard_limit(self) -> bool:
        """True if the context view does not fit the usable budget."""
        return self.engine.is_hard_overflow(self.meter.view_tokens, self.model_info)

    async def run_inline(self, *, force: bool = False) -> CompactionResult:
        """Compact in this process now, then re-measure the context view."""
        result = await self.engine.run_compaction(self.session_id, force=force)
        await self.meter.refresh()
        return result
