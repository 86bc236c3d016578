"""The three compaction levels as plain functions (the seed's names), over the summarisers.

Level 1 (structured model summary) and Level 2 (aggressive model summary) return
``None`` to escalate when the model fails, times out, returns nothing, or returns
something not smaller than its input (convergence check). Level 3 never calls a
model and always returns a candidate within its target. The ``condense_*``
functions are the same three levels for merging summaries.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from mnesis.compaction.candidates import (
    MIN_MESSAGES_TO_SUMMARISE,
    CondensedCandidate,
    SummaryCandidate,
    SummaryTarget,
    render_transcript,
)
from mnesis.compaction.ladder import model_level
from mnesis.compaction.summariser import (
    CONDENSE_LEVEL3_MAX_TOKENS,
    DEFAULT_INPUT_WINDOW,
    ExtractiveSummariser,
    LLMCall,
)
from mnesis.context.builder import ContextBudget
from mnesis.models.message import MessageWithParts
from mnesis.store.base import SummaryRecord
from mnesis.tokens.estimator import TokenEstimator

_P = ParamSpec("_P")
_R = TypeVar("_R")

CONDENSED_TARGET_TOKENS = 900
"""The default target of a condensed summary (``CompactionConfig.condensed_target_tokens``)."""

__all__ = [
    "CONDENSED_TARGET_TOKENS",
    "CONDENSE_LEVEL3_MAX_TOKENS",
    "MIN_MESSAGES_TO_SUMMARISE",
    "CondensationCandidate",
    "CondensedCandidate",
    "LLMCall",
    "SummaryCandidate",
    "condense_level1",
    "condense_level2",
    "condense_level3",
    "condense_level3_deterministic",
    "extractive_candidate",
    "level1_summarise",
    "level2_summarise",
    "level3_deterministic",
    "render_transcript",
]


def _one_level(
    levels: Callable[Concatenate[int, _P], Awaitable[_R]], level: int, name: str, doc: str
) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """``levels`` at one level: a coroutine function named ``name`` with the docstring
    ``doc`` and the parameters of ``levels`` after the level (as ``inspect`` shows them)."""

    async def at_level(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await levels(level, *args, **kwargs)

    signature = inspect.signature(levels)
    at_level.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:]
    )
    at_level.__annotations__ = {k: v for k, v in levels.__annotations__.items() if k != "level"}
    at_level.__name__ = at_level.__qualname__ = name
    at_level.__doc__ = doc
    return at_level


async def _summarise(
    level: int,
    /,
    messages: list[MessageWithParts],
    model: str,
    budget: ContextBudget,
    estimator: TokenEstimator,
    llm_call: LLMCall,
    compaction_prompt: str | None = None,
    model_context_limit: int = DEFAULT_INPUT_WINDOW,
    model_max_output_tokens: int = 0,
    compaction_estimator: TokenEstimator | None = None,
    *,
    target_tokens: int = 600,
    footer_cap: int = 40,
) -> SummaryCandidate | None:
    """Summarise ``messages`` with the model at ``level`` (1 or 2), or None to escalate:
    the implementation of :func:`level1_summarise` and :func:`level2_summarise`."""
    rung = model_level(
        level, model, llm_call, input_window=model_context_limit, leaf_prompt=compaction_prompt
    )
    counter = compaction_estimator or estimator
    return await rung.summarise(
        messages, SummaryTarget(target_tokens, footer_cap, counter, budget.usable)
    )


level1_summarise = _one_level(
    _summarise,
    1,
    "level1_summarise",
    """Level 1: structured summary (eight sections) by the model, or None to escalate.

    Input is capped at 75 % of ``model_context_limit``; file IDs of the
    summarised messages go into the ``[LCM File IDs: ...]`` footer.
    ``compaction_estimator`` (0.4.0's) counts in the compaction model's encoding when
    given; ``model_max_output_tokens`` is accepted for 0.4.0's code (the target bounds
    the reply).
    """,
)

level2_summarise = _one_level(
    _summarise,
    2,
    "level2_summarise",
    """Level 2: five-field terse summary, messages cut to 500 chars, or None to escalate
    (the parameters as :func:`level1_summarise`).""",
)


def extractive_candidate(
    messages: list[MessageWithParts],
    budget: ContextBudget,
    estimator: TokenEstimator,
    *,
    level: int,
    target_tokens: int = 600,
    footer_cap: int = 40,
) -> SummaryCandidate:
    """A candidate from the offline extractive summariser (no model), within the target."""
    return ExtractiveSummariser(level).summarise_now(
        messages, SummaryTarget(target_tokens, footer_cap, estimator, budget.usable)
    )


def level3_deterministic(
    messages: list[MessageWithParts],
    budget: ContextBudget,
    estimator: TokenEstimator,
    *,
    target_tokens: int = 600,
    footer_cap: int = 40,
) -> SummaryCandidate:
    """Level 3: no model. An extractive summary within the target; always succeeds.

    File IDs of *all* input messages go into the footer, even those whose prose
    did not fit. With no messages the candidate is an empty-span notice covering
    zero messages (still a valid candidate, never an exception).
    """
    if not messages:
        text = "[CONTEXT TRUNCATED — DETERMINISTIC FALLBACK] (no messages to summarise)"
        return SummaryCandidate(
            text=text,
            token_count=estimator.estimate(text),
            span_start_message_id="",
            span_end_message_id="",
            compaction_level=3,
            messages_covered=0,
        )
    return extractive_candidate(
        messages, budget, estimator, level=3, target_tokens=target_tokens, footer_cap=footer_cap
    )


async def _condense(
    level: int,
    /,
    nodes: Sequence[SummaryRecord],
    model: str,
    budget: ContextBudget,
    estimator: TokenEstimator,
    llm_call: LLMCall,
    model_max_output_tokens: int = 0,
    model_context_limit: int = DEFAULT_INPUT_WINDOW,
    compaction_estimator: TokenEstimator | None = None,
    *,
    target_tokens: int = CONDENSED_TARGET_TOKENS,
    footer_cap: int = 40,
    prompt: str | None = None,
) -> CondensedCandidate | None:
    """Merge ``nodes`` with the model at ``level`` (1 or 2), or None to escalate: Level 1
    with the structured prompt, Level 2 tersely (each summary cut to 800 chars). The
    implementation of :func:`condense_level1` and :func:`condense_level2`."""
    rung = model_level(
        level, model, llm_call, input_window=model_context_limit, condense_prompt=prompt
    )
    counter = compaction_estimator or estimator
    candidate = await rung.condense(nodes, SummaryTarget(target_tokens, footer_cap, counter))
    if candidate is not None:
        candidate.parent_node_ids = [n.id for n in nodes]
    return candidate


condense_level1 = _one_level(
    _condense,
    1,
    "condense_level1",
    """Merge summaries with the structured prompt, or None to escalate (0.4.0's
    parameters; ``budget`` and ``model_max_output_tokens`` are accepted for its code, the
    target bounds the reply).""",
)

condense_level2 = _one_level(
    _condense,
    2,
    "condense_level2",
    """Merge summaries tersely (each cut to 800 chars), or None to escalate (the
    parameters as :func:`condense_level1`).""",
)


def condense_level3_deterministic(
    nodes: Sequence[SummaryRecord], estimator: TokenEstimator, budget: ContextBudget
) -> CondensedCandidate:
    """0.4.0's name of :func:`condense_level3` at the default condensed target: a merge
    without a model that always succeeds."""
    candidate = condense_level3(
        nodes, estimator, target_tokens=CONDENSED_TARGET_TOKENS, footer_cap=40
    )
    candidate.parent_node_ids = [n.id for n in nodes]
    return candidate


CondensationCandidate = CondensedCandidate
"""0.4.0's name of a condensed summary before it is committed."""


def condense_level3(
    summaries: Sequence[SummaryRecord],
    estimator: TokenEstimator,
    *,
    target_tokens: int,
    footer_cap: int,
    level: int = 3,
) -> CondensedCandidate:
    """Deterministic merge of the summaries' sections (no model).

    Level 3 is capped at ``min(target, 512)`` tokens; the same merge is used as
    Level 1 by the offline ``"extractive"`` compaction model, at the full target.
    """
    return ExtractiveSummariser(level).condense_now(
        summaries, SummaryTarget(target_tokens, footer_cap, estimator)
    )
