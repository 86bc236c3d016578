"""``ContextBudget``: how many tokens of a model's window a context may use.

Defined here (a model-level record) so that everything above can name it; it is
re-exported by :mod:`mnesis.context.builder` and :mod:`mnesis.models.message`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnesis.config import MnesisConfig
from mnesis.models.model_info import ModelInfo

__all__ = ["ContextBudget"]


@dataclass(frozen=True, slots=True)
class ContextBudget:
    """Token budget of one model.

    ``usable = context_limit - reserved_output_tokens - compaction_buffer``, but never
    below a quarter of the window: small models get a proportionally smaller buffer.
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
        buffer = min(config.compaction.compaction_output_budget, max(0, limit - reserved) // 2)
        usable = max(limit - reserved - buffer, limit // 4, 1)
        return cls(limit, reserved, buffer, usable)
