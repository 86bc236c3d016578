"""The compaction model of an engine: which model a run's ladder asks, the window it
reads with, which client answers it, and how many calls it made."""

from __future__ import annotations

from typing import Any

from mnesis.compaction.ladder import EXTRACTIVE_MODEL, default_ladder
from mnesis.compaction.summariser import EXTRACTIVE_WINDOW, Summariser
from mnesis.config import MnesisConfig
from mnesis.llm import LLMClient, LLMRequest, complete, resolve_client
from mnesis.models.model_info import ModelInfo

__all__ = ["CompactionModel"]


class CompactionModel:
    """Builds a run's summariser ladder and makes its model calls.

    ``llm`` answers for ``session_model`` (the session's own client); any other
    compaction model is resolved from its model string.
    """

    def __init__(self, config: MnesisConfig, session_model: str, llm: LLMClient | None) -> None:
        self.config = config
        self.session_model = session_model
        self.calls = 0
        """Model calls made so far."""
        self._llm = llm

    def ladder(self, model_override: str | None = None) -> list[Summariser]:
        """Level 1, Level 2 and Level 3 of the compaction model: ``model_override``, else
        the configured ``compaction_model``, else the session's model."""
        cfg = self.config.compaction
        model = model_override or cfg.compaction_model or self.session_model
        return default_ladder(model, cfg, self._call, input_window=self.window(model))

    def window(self, model: str) -> int:
        """The window of compaction ``model``: ``compaction_context_limit`` if set, else the
        session's (``model_overrides`` included) for the session's model, else the table's."""
        explicit = self.config.compaction.compaction_context_limit
        if explicit is not None:
            return explicit
        if model == EXTRACTIVE_MODEL:
            return EXTRACTIVE_WINDOW
        overrides = self.config.model_overrides if model == self.session_model else None
        return ModelInfo.from_model_string(model, overrides).context_limit

    async def _call(self, model: str, messages: list[dict[str, Any]], max_tokens: int) -> str:
        client = self._client_for(model)
        self.calls += 1
        response = await complete(
            client,
            LLMRequest(model=model, messages=messages, max_tokens=max_tokens, purpose="compaction"),
            timeout=self.config.compaction.model_timeout_seconds,
        )
        return response.text

    def _client_for(self, model: str) -> LLMClient:
        if self._llm is not None and model == self.session_model:
            return self._llm
        return resolve_client(model, None)
