"""The escalation ladder: summarisers tried in order, shared by leaf and condensed passes.

The default ladder for a model is Level 1, Level 2 (if enabled), then the
deterministic Level 3. The compaction model ``"extractive"`` is the one
exception, and only here: its ladder is the extractive summariser at Level 1.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from mnesis.compaction.breaker import CircuitBreaker
from mnesis.compaction.prompts import (
    CONDENSE_LEVEL1_PROMPT,
    CONDENSE_LEVEL2_PROMPT,
    LEVEL1_PROMPT,
    LEVEL2_PROMPT,
)
from mnesis.compaction.summariser import (
    DEFAULT_INPUT_WINDOW,
    ExtractiveSummariser,
    LLMCall,
    ModelSummariser,
    Summariser,
)
from mnesis.config import CompactionConfig
from mnesis.models.model_info import ModelInfo

__all__ = [
    "EXTRACTIVE_MODEL",
    "LEVEL2_MESSAGE_CHARS",
    "LEVEL2_SUMMARY_CHARS",
    "climb",
    "default_ladder",
    "model_level",
]

EXTRACTIVE_MODEL = "extractive"
"""The compaction model string that selects the offline extractive summariser."""
LEVEL2_MESSAGE_CHARS = 500
LEVEL2_SUMMARY_CHARS = 800

C = TypeVar("C")


def model_level(
    level: int,
    model: str,
    llm_call: LLMCall,
    *,
    input_window: int = DEFAULT_INPUT_WINDOW,
    leaf_prompt: str | None = None,
    condense_prompt: str | None = None,
) -> ModelSummariser:
    """Model Level 1 (structured) or Level 2 (terse, inputs cut), default prompts unless given."""
    if level == 1:
        return ModelSummariser(
            1,
            model,
            llm_call,
            leaf_prompt or LEVEL1_PROMPT,
            condense_prompt or CONDENSE_LEVEL1_PROMPT,
            input_window,
        )
    return ModelSummariser(
        level,
        model,
        llm_call,
        leaf_prompt or LEVEL2_PROMPT,
        condense_prompt or CONDENSE_LEVEL2_PROMPT,
        input_window,
        message_chars=LEVEL2_MESSAGE_CHARS,
        summary_chars=LEVEL2_SUMMARY_CHARS,
    )


def default_ladder(
    model: str,
    config: CompactionConfig,
    llm_call: LLMCall,
    *,
    input_window: int | None = None,
) -> list[Summariser]:
    """The ladder for compaction ``model``: prompts and Level 2 as ``config`` says.

    ``input_window`` is the model's window (default: ``compaction_context_limit``, else
    the model table's); every prompt a model rung sends fits it."""
    if model == EXTRACTIVE_MODEL:
        return [ExtractiveSummariser(level=1)]
    if input_window is None:
        input_window = config.compaction_context_limit
    if input_window is None:
        input_window = ModelInfo.from_model_string(model, None).context_limit
    ladder: list[Summariser] = [
        model_level(
            1,
            model,
            llm_call,
            input_window=input_window,
            leaf_prompt=config.compaction_prompt,
            condense_prompt=config.condense_prompt,
        )
    ]
    if config.level2_enabled:
        ladder.append(
            model_level(
                2,
                model,
                llm_call,
                input_window=input_window,
                leaf_prompt=config.level2_prompt,
                condense_prompt=config.condense_level2_prompt,
            )
        )
    ladder.append(ExtractiveSummariser(level=3))
    return ladder


async def climb(
    ladder: Sequence[Summariser],
    attempt: Callable[[Summariser], Awaitable[C | None]],
    breaker: CircuitBreaker,
) -> C | None:
    """The first rung's result that is not None, or None if every rung escalated.

    Model rungs are skipped while the breaker is open. One outcome per climb is
    reported to the breaker, if a model rung ran: success if a model rung answered.
    """
    tried_model = False
    for rung in ladder:
        if rung.uses_model:
            if not breaker.available():
                continue
            tried_model = True
        candidate = await attempt(rung)
        if candidate is not None:
            if tried_model:
                breaker.record(rung.uses_model)
            return candidate
    if tried_model:
        breaker.record(False)
    return None
