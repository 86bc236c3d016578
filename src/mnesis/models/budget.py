"""``ContextBudget``: how many tokens of a model's window a context may use.

Defined here (a model-level record) so that everything above can name it; it is
re-exported by :mod:`mnesis.context.builder` and :mod:`mnesis.models.message`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnesis.config import MnesisConfig
from mnesis.models.model_info import ModelInfo
from mnesis.models.window import WindowSettings

__all__ = ["ContextBudget"]


@dataclass(frozen=True, slots=True)
class ContextBudget:
    """Token budget of one model.

    ``usable = context_limit - reserved_output_tokens - compaction_buffer``, but never
    below a quarter of the window. The buffer is ``compaction_output_budget`` when the
    user set it, else its documented 20,000 scaled to the window (``WindowSettings``).
    """

    context_limit: int
    reserved_output_tokens: int
    compaction_buffer: int
    usable: int

    @classmethod
    def compute(cls, model: ModelInfo, config: MnesisConfig) -> ContextBudget:
        """The budget of ``model`` under ``config``."""
        limit = model.context_limit
        reserved = min(model.max_output_tokens, limit // 2)
        wanted = WindowSettings.derive(limit, config.compaction).compaction_output_budget
        buffer = min(wanted, max(0, limit - reserved) // 2)
        usable = max(limit - reserved - buffer, limit // 4, 1)
        return cls(limit, reserved, buffer, usable)
