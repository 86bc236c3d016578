"""``ContextBudget``: how many tokens of a model's window a context may use.

Defined here (a model-level record) so that everything above can name it; it is
re-exported by :mod:`mnesis.context.builder` and :mod:`mnesis.models.message`.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from mnesis.config import MnesisConfig
from mnesis.models.model_info import ModelInfo
from mnesis.models.window import WindowSettings

__all__ = ["ContextBudget"]


class ContextBudget(BaseModel):
    """Token budget of one model.

    ``usable = model_context_limit - reserved_output_tokens - compaction_buffer``, but
    never below a quarter of the window. The buffer is ``compaction_output_budget`` when the
    user set it, else its documented 20,000 scaled to the window (``WindowSettings``).
    ``usable`` is computed when not given. ``context_limit`` is accepted for
    ``model_context_limit`` (0.4.0's name) and reads it back.
    """

    model_config = ConfigDict(frozen=True, protected_namespaces=())

    model_context_limit: int = Field(
        validation_alias=AliasChoices("model_context_limit", "context_limit")
    )
    reserved_output_tokens: int
    compaction_buffer: int = 20_000
    usable: int = 0

    @model_validator(mode="before")
    @classmethod
    def _usable(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("usable") is None:
            limit = data.get("model_context_limit", data.get("context_limit"))
            reserved = data.get("reserved_output_tokens")
            buffer = data.get("compaction_buffer", 20_000)
            if isinstance(limit, int) and isinstance(reserved, int) and isinstance(buffer, int):
                data = {**data, "usable": max(limit - reserved - buffer, limit // 4, 1)}
        return data

    @property
    def context_limit(self) -> int:
        """The model's whole window (``model_context_limit``)."""
        return self.model_context_limit

    def fits(self, token_count: int) -> bool:
        """Whether ``token_count`` tokens fit in :attr:`usable`."""
        return token_count <= self.usable

    def remaining(self, used: int) -> int:
        """Tokens left of :attr:`usable` after ``used`` (never below 0)."""
        return max(0, self.usable - used)

    @classmethod
    def compute(cls, model: ModelInfo, config: MnesisConfig) -> ContextBudget:
        """The budget of ``model`` under ``config``."""
        limit = model.context_limit
        reserved = min(model.max_output_tokens, limit // 2)
        wanted = WindowSettings.derive(limit, config.compaction).compaction_output_budget
        buffer = min(wanted, max(0, limit - reserved) // 2)
        usable = max(limit - reserved - buffer, limit // 4, 1)
        return cls(
            model_context_limit=limit,
            reserved_output_tokens=reserved,
            compaction_buffer=buffer,
            usable=usable,
        )
