"""The three compaction levels, for leaf summaries and for condensed ones.

Level 1 (structured model summary) and Level 2 (aggressive model summary) return
``None`` to escalate when the model fails, times out, returns nothing, or returns
something not smaller than its input (convergence check). Level 3 never calls a
model and always returns a candidate within its target.

Every candidate, at every level, ends with the bounded ``[LCM File IDs: ...]``
footer of the file IDs it covers; the body is sized so body plus footer fits
the target.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mnesis.compaction.extractive import extractive_condense, extractive_summary
from mnesis.compaction.file_ids import (
    extract_file_ids_from_messages,
    file_ids_footer,
    strip_footer,
)
from mnesis.compaction.prompts import (
    CONDENSE_LEVEL1_PROMPT,
    CONDENSE_LEVEL2_PROMPT,
    LEVEL1_PROMPT,
    LEVEL2_PROMPT,
)
from mnesis.context.builder import ContextBudget
from mnesis.models.message import MessageWithParts
from mnesis.models.render import render_message_text
from mnesis.store.base import SummaryRecord
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "CONDENSE_LEVEL3_MAX_TOKENS",
    "MIN_MESSAGES_TO_SUMMARISE",
    "LLMCall",
    "SummaryCandidate",
    "condense_level1",
    "condense_level2",
    "condense_level3",
    "extractive_candidate",
    "level1_summarise",
    "level2_summarise",
    "level3_deterministic",
    "render_transcript",
]

logger = logging.getLogger("mnesis.compaction")

MIN_MESSAGES_TO_SUMMARISE = 3
CONDENSE_LEVEL3_MAX_TOKENS = 512
_LEVEL2_MESSAGE_CHARS = 500
_CONDENSE_LEVEL2_CHARS = 800

LLMCall = Callable[[str, list[dict[str, Any]], int], Awaitable[str]]
"""``async (model, messages, max_tokens) -> text``; raises on failure."""


@dataclass(slots=True)
class SummaryCandidate:
    """A compaction summary before it is committed."""

    text: str
    token_count: int
    span_start_message_id: str
    span_end_message_id: str
    compaction_level: int
    messages_covered: int
    file_ids: list[str] = field(default_factory=list)


def render_transcript(messages: Sequence[MessageWithParts], per_message_chars: int = 0) -> str:
    """Messages as a plain transcript for a summarisation prompt."""
    lines = []
    for message in messages:
        text = render_message_text(message)
        if per_message_chars and len(text) > per_message_chars:
            text = text[:per_message_chars] + " …"
        lines.append(f"[{message.role} {message.id}]\n{text}")
    return "\n\n".join(lines)


def _apply_input_cap(
    messages: Sequence[MessageWithParts], estimator: TokenEstimator, model_context_limit: int
) -> list[MessageWithParts]:
    cap = int(model_context_limit * 0.75)
    kept: list[MessageWithParts] = []
    used = 0
    for message in messages:
        cost = message.message.token_estimate or estimator.estimate_message(message)
        if kept and len(kept) >= MIN_MESSAGES_TO_SUMMARISE and used + cost > cap:
            break
        kept.append(message)
        used += cost
    return kept


def _finish(
    body: str,
    *,
    level: int,
    messages: Sequence[MessageWithParts],
    file_ids: list[str],
    target_tokens: int,
    footer_cap: int,
    estimator: TokenEstimator,
) -> SummaryCandidate:
    footer = file_ids_footer(
        file_ids, cap=footer_cap, max_tokens=max(16, target_tokens // 3), estimator=estimator
    )
    text = f"{body.strip()}\n\n{footer}" if footer else body.strip()
    return SummaryCandidate(
        text=text,
        token_count=estimator.estimate(text),
        span_start_message_id=messages[0].id,
        span_end_message_id=messages[-1].id,
        compaction_level=level,
        messages_covered=len(messages),
        file_ids=file_ids,
    )


def _body_budget(
    file_ids: list[str], target_tokens: int, footer_cap: int, estimator: TokenEstimator
) -> int:
    footer = file_ids_footer(
        file_ids, cap=footer_cap, max_tokens=max(16, target_tokens // 3), estimator=estimator
    )
    return max(16, target_tokens - estimator.estimate(footer) - 4)


def _looks_like_summary(text: str) -> bool:
    """Reject garbage: answers that are mostly symbols, control or invisible characters."""
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return False
    junk = sum(1 for c in visible if not c.isprintable() or c in "\ufffd\u202e\u200b")
    wordy = sum(1 for c in visible if c.isalnum())
    return junk / len(visible) <= 0.05 and wordy / len(visible) >= 0.5


async def _model_level(
    level: int,
    prompt: str,
    transcript: str,
    messages: list[MessageWithParts],
    model: str,
    estimator: TokenEstimator,
    llm_call: LLMCall,
    target_tokens: int,
    footer_cap: int,
    input_tokens: int,
) -> SummaryCandidate | None:
    file_ids = extract_file_ids_from_messages(messages)
    body_target = _body_budget(file_ids, target_tokens, footer_cap, estimator)
    system = prompt.replace("{target_tokens}", str(body_target))
    request = [{"role": "system", "content": system}, {"role": "user", "content": transcript}]
    try:
        text = await llm_call(model, request, max(64, body_target * 2))
    except Exception as exc:
        logger.info("level %d summary failed: %s", level, exc)
        return None
    if not isinstance(text, str) or not text.strip():
        logger.info("level %d summary was empty", level)
        return None
    if not _looks_like_summary(text):
        logger.info("level %d answer does not look like a summary; rejected", level)
        return None
    candidate = _finish(
        text,
        level=level,
        messages=messages,
        file_ids=file_ids,
        target_tokens=target_tokens,
        footer_cap=footer_cap,
        estimator=estimator,
    )
    if candidate.token_count >= input_tokens:
        logger.info(
            "level %d did not converge (%d >= %d tokens)",
            level,
            candidate.token_count,
            input_tokens,
        )
        return None
    if candidate.token_count > target_tokens * 2:
        logger.info(
            "level %d overshot its target (%d > 2x%d)", level, candidate.token_count, target_tokens
        )
        return None
    return candidate


async def level1_summarise(
    messages: list[MessageWithParts],
    model: str,
    budget: ContextBudget,
    estimator: TokenEstimator,
    llm_call: LLMCall,
    compaction_prompt: str | None = None,
    model_context_limit: int = 200_000,
    *,
    target_tokens: int = 600,
    footer_cap: int = 40,
) -> SummaryCandidate | None:
    """Level 1: structured summary (eight sections) by the model, or None to escalate."""
    kept = _apply_input_cap(messages, estimator, model_context_limit)
    if not kept:
        return None
    transcript = render_transcript(kept)
    input_tokens = estimator.estimate(transcript)
    target = min(target_tokens, budget.usable)
    return await _model_level(
        1,
        compaction_prompt or LEVEL1_PROMPT,
        transcript,
        kept,
        model,
        estimator,
        llm_call,
        target,
        footer_cap,
        input_tokens,
    )


async def level2_summarise(
    messages: list[MessageWithParts],
    model: str,
    budget: ContextBudget,
    estimator: TokenEstimator,
    llm_call: LLMCall,
    compaction_prompt: str | None = None,
    model_context_limit: int = 200_000,
    *,
    target_tokens: int = 600,
    footer_cap: int = 40,
) -> SummaryCandidate | None:
    """Level 2: five-field terse summary, messages cut to 500 chars, or None to escalate."""
    kept = _apply_input_cap(messages, estimator, model_context_limit)
    if not kept:
        return None
    transcript = render_transcript(kept, _LEVEL2_MESSAGE_CHARS)
    input_tokens = estimator.estimate(render_transcript(kept))
    target = min(target_tokens, budget.usable)
    return await _model_level(
        2,
        compaction_prompt or LEVEL2_PROMPT,
        transcript,
        kept,
        model,
        estimator,
        llm_call,
        target,
        footer_cap,
        input_tokens,
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
    file_ids = extract_file_ids_from_messages(messages)
    target = max(32, min(target_tokens, budget.usable))
    body_target = _body_budget(file_ids, target, footer_cap, estimator)
    notice = "[Deterministic summary (level 3): extracted without a model]" if level == 3 else ""
    body = extractive_summary(
        messages,
        target_tokens=max(8, body_target - estimator.estimate(notice) - 2),
        estimator=estimator,
    )
    return _finish(
        f"{notice}\n{body}" if notice else body,
        level=level,
        messages=messages,
        file_ids=file_ids,
        target_tokens=target,
        footer_cap=footer_cap,
        estimator=estimator,
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
    did not fit.
    """
    return extractive_candidate(
        messages, budget, estimator, level=3, target_tokens=target_tokens, footer_cap=footer_cap
    )


def _summaries_text(summaries: Sequence[SummaryRecord], chars: int = 0) -> str:
    blocks = []
    for s in summaries:
        body = strip_footer(s.content)
        if chars and len(body) > chars:
            body = body[:chars] + " …"
        blocks.append(f"[summary {s.id} ({s.kind}, {s.source_message_count} messages)]\n{body}")
    return "\n\n".join(blocks)


def _merged_file_ids(summaries: Sequence[SummaryRecord]) -> list[str]:
    merged: dict[str, None] = {}
    for s in summaries:
        for fid in s.file_ids:
            merged.setdefault(fid, None)
    return list(merged)


@dataclass(slots=True)
class CondensedCandidate:
    """A condensed summary before it is committed."""

    text: str
    token_count: int
    compaction_level: int
    file_ids: list[str]


def _condensed(
    body: str,
    level: int,
    file_ids: list[str],
    target: int,
    footer_cap: int,
    estimator: TokenEstimator,
) -> CondensedCandidate:
    footer = file_ids_footer(
        file_ids, cap=footer_cap, max_tokens=max(16, target // 3), estimator=estimator
    )
    text = f"{body.strip()}\n\n{footer}" if footer else body.strip()
    return CondensedCandidate(text, estimator.estimate(text), level, file_ids)


async def _condense_model(
    level: int,
    prompt: str,
    text: str,
    summaries: Sequence[SummaryRecord],
    model: str,
    estimator: TokenEstimator,
    llm_call: LLMCall,
    target: int,
    footer_cap: int,
) -> CondensedCandidate | None:
    file_ids = _merged_file_ids(summaries)
    footer = file_ids_footer(
        file_ids, cap=footer_cap, max_tokens=max(16, target // 3), estimator=estimator
    )
    body_target = max(16, target - estimator.estimate(footer) - 4)
    request = [
        {"role": "system", "content": prompt.replace("{target_tokens}", str(body_target))},
        {"role": "user", "content": text},
    ]
    try:
        out = await llm_call(model, request, max(64, body_target * 2))
    except Exception as exc:
        logger.info("condense level %d failed: %s", level, exc)
        return None
    if not isinstance(out, str) or not out.strip() or not _looks_like_summary(out):
        return None
    candidate = _condensed(out, level, file_ids, target, footer_cap, estimator)
    input_tokens = sum(s.token_count for s in summaries)
    if candidate.token_count >= input_tokens or candidate.token_count > target * 2:
        return None
    return candidate


async def condense_level1(
    summaries: Sequence[SummaryRecord],
    model: str,
    estimator: TokenEstimator,
    llm_call: LLMCall,
    *,
    target_tokens: int,
    footer_cap: int,
    prompt: str | None = None,
) -> CondensedCandidate | None:
    """Merge summaries with the structured prompt, or None to escalate."""
    return await _condense_model(
        1,
        prompt or CONDENSE_LEVEL1_PROMPT,
        _summaries_text(summaries),
        summaries,
        model,
        estimator,
        llm_call,
        target_tokens,
        footer_cap,
    )


async def condense_level2(
    summaries: Sequence[SummaryRecord],
    model: str,
    estimator: TokenEstimator,
    llm_call: LLMCall,
    *,
    target_tokens: int,
    footer_cap: int,
    prompt: str | None = None,
) -> CondensedCandidate | None:
    """Merge summaries tersely (each cut to 800 chars), or None to escalate."""
    return await _condense_model(
        2,
        prompt or CONDENSE_LEVEL2_PROMPT,
        _summaries_text(summaries, _CONDENSE_LEVEL2_CHARS),
        summaries,
        model,
        estimator,
        llm_call,
        target_tokens,
        footer_cap,
    )


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
    target = min(target_tokens, CONDENSE_LEVEL3_MAX_TOKENS) if level == 3 else target_tokens
    file_ids = _merged_file_ids(summaries)
    footer = file_ids_footer(
        file_ids, cap=footer_cap, max_tokens=max(16, target // 3), estimator=estimator
    )
    body_target = max(16, target - estimator.estimate(footer) - 4)
    notice = (
        f"[Condensed deterministically from {len(summaries)} summaries (level 3)]"
        if level == 3
        else ""
    )
    body = extractive_condense(
        [strip_footer(s.content) for s in summaries],
        target_tokens=max(8, body_target - estimator.estimate(notice) - 2),
        estimator=estimator,
    )
    if notice:
        body = f"{notice}\n{body}"
    return _condensed(body, level, file_ids, target, footer_cap, estimator)
