"""The text summarisers: a model level and a user's callable, as ladder rungs.

Both get a transcript (or the summaries to merge) cut to fit their input window and a
body target in tokens, and answer with the summary body. Their answer is rejected, so
the ladder escalates, when it fails, is empty, looks like garbage, is not smaller than
its input (convergence check) or overshoots twice its target. The protocol they follow
is :class:`mnesis.compaction.summariser.Summariser`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mnesis.compaction.candidates import (
    CondensedCandidate,
    SummaryCandidate,
    SummaryTarget,
    body_budget,
    cap_input,
    looks_like_summary,
    merged_file_ids,
    render_summaries,
    render_transcript,
    with_footer,
)
from mnesis.compaction.file_ids import extract_file_ids_from_messages
from mnesis.models.message import MessageWithParts
from mnesis.store.base import SummaryRecord
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "DEFAULT_INPUT_WINDOW",
    "CallableSummariser",
    "LLMCall",
    "ModelSummariser",
    "SummariseFn",
]

logger = logging.getLogger("mnesis.compaction")

DEFAULT_INPUT_WINDOW = 200_000
"""The window a text summariser assumes when it is not told its model's (a 200k model's)."""

LLMCall = Callable[[str, list[dict[str, Any]], int], Awaitable[str]]
"""``async (model, messages, max_tokens) -> text``; raises on failure."""

SummariseFn = Callable[[str, int], Awaitable[str]]
"""``async (text, target_tokens) -> summary body``; raises on failure."""

SpanKind = Literal["leaf", "condensed"]

_MARGIN = 64
"""Tokens of a summariser request kept free for the estimate's error and the framing."""
_MIN_INPUT_TOKENS = 64
_MIN_ITEM_CHARS = 80
_FIT_STEPS = 4


@dataclass(frozen=True, slots=True)
class _Input:
    """A summariser's input text, renderable with each message (or summary) cut to a
    number of characters (0: as the level renders it)."""

    render: Callable[[int], str]
    chars: int
    items: int


class _TextSummariser:
    """Shared body of the model levels and the callable: render, ask, validate, add the footer."""

    level: int
    input_window: int
    message_chars: int
    summary_chars: int

    async def _complete(self, kind: SpanKind, text: str, body_target: int) -> str:
        raise NotImplementedError

    async def summarise(
        self, messages: Sequence[MessageWithParts], target: SummaryTarget
    ) -> SummaryCandidate | None:
        """A leaf summary of the messages that fit the input window, or None to escalate."""
        kept = cap_input(messages, target.estimator, self.input_window)
        if not kept:
            return None
        full = render_transcript(kept)

        def render(cut: int) -> str:
            return render_transcript(kept, cut) if cut else full

        file_ids = extract_file_ids_from_messages(kept)
        answer = await self._attempt(
            "leaf",
            _Input(render, self.message_chars, len(kept)),
            file_ids,
            target,
            target.capped_tokens,
            full_text=full,
        )
        if answer is None:
            return None
        text, tokens = answer
        return SummaryCandidate(
            text=text,
            token_count=tokens,
            span_start_message_id=kept[0].id,
            span_end_message_id=kept[-1].id,
            compaction_level=self.level,
            messages_covered=len(kept),
            file_ids=file_ids,
        )

    async def condense(
        self, summaries: Sequence[SummaryRecord], target: SummaryTarget
    ) -> CondensedCandidate | None:
        """A merge of ``summaries``, or None to escalate."""
        file_ids = merged_file_ids(summaries)

        def render(cut: int) -> str:
            return render_summaries(summaries, cut)

        answer = await self._attempt(
            "condensed",
            _Input(render, self.summary_chars, len(summaries)),
            file_ids,
            target,
            target.capped_tokens,
            input_tokens=sum(s.token_count for s in summaries),
        )
        if answer is None:
            return None
        text, tokens = answer
        return CondensedCandidate(text, tokens, self.level, file_ids)

    def _overhead(self, kind: SpanKind, body_target: int, estimator: TokenEstimator) -> int:
        """Tokens of the request besides the input text: instructions and the answer."""
        return max(64, body_target * 2)

    def _fit(self, source: _Input, allowed: int, estimator: TokenEstimator) -> str:
        """The input text, each item cut shorter until the whole fits ``allowed`` tokens."""
        text = source.render(source.chars)
        size = estimator.estimate(text)
        cut = source.chars or max(len(text) // max(1, source.items), 1)
        for _ in range(_FIT_STEPS):
            if size <= allowed:
                return text
            cut = max(_MIN_ITEM_CHARS, int(cut * allowed / size * 0.9))
            text = source.render(cut)
            size = estimator.estimate(text)
        if size <= allowed:
            return text
        return text[: max(1, int(len(text) * allowed / size * 0.9))]

    async def _attempt(
        self,
        kind: SpanKind,
        source: _Input,
        file_ids: list[str],
        target: SummaryTarget,
        target_tokens: int,
        *,
        full_text: str | None = None,
        input_tokens: int = 0,
    ) -> tuple[str, int] | None:
        estimator = target.estimator
        if full_text is not None:
            input_tokens = estimator.estimate(full_text)
        body_target = body_budget(file_ids, target_tokens, target.footer_cap, estimator)
        allowed = self.input_window - self._overhead(kind, body_target, estimator) - _MARGIN
        text = self._fit(source, max(_MIN_INPUT_TOKENS, allowed), estimator)
        try:
            answer = await self._complete(kind, text, body_target)
        except Exception as exc:
            logger.info("%s level %d summary failed: %s", kind, self.level, exc)
            return None
        if not isinstance(answer, str) or not answer.strip():
            logger.info("%s level %d summary was empty", kind, self.level)
            return None
        if not looks_like_summary(answer):
            logger.info("%s level %d answer does not look like a summary", kind, self.level)
            return None
        out = with_footer(answer, file_ids, target_tokens, target.footer_cap, estimator)
        tokens = estimator.estimate(out)
        if tokens >= input_tokens:
            logger.info(
                "%s level %d did not converge (%d >= %d)", kind, self.level, tokens, input_tokens
            )
            return None
        if tokens > target_tokens * 2:
            logger.info("%s level %d overshot (%d > 2x%d)", kind, self.level, tokens, target_tokens)
            return None
        return out, tokens


@dataclass(frozen=True, slots=True)
class ModelSummariser(_TextSummariser):
    """A model level: the level's prompt (``{target_tokens}`` filled in) and the transcript.

    Level 2 sets ``message_chars`` / ``summary_chars`` to cut each message /
    summary of its input.
    """

    level: int
    model: str
    llm_call: LLMCall
    leaf_prompt: str
    condense_prompt: str
    input_window: int = DEFAULT_INPUT_WINDOW
    """The compaction model's window; a leaf input is capped at 75 % of it."""
    message_chars: int = 0
    summary_chars: int = 0

    @property
    def uses_model(self) -> bool:
        """Always True."""
        return True

    def _overhead(self, kind: SpanKind, body_target: int, estimator: TokenEstimator) -> int:
        """The system prompt and the answer's ``max_tokens``."""
        prompt = self.leaf_prompt if kind == "leaf" else self.condense_prompt
        return estimator.estimate(prompt) + 16 + max(64, body_target * 2)

    async def _complete(self, kind: SpanKind, text: str, body_target: int) -> str:
        prompt = self.leaf_prompt if kind == "leaf" else self.condense_prompt
        request = [
            {"role": "system", "content": prompt.replace("{target_tokens}", str(body_target))},
            {"role": "user", "content": text},
        ]
        return await self.llm_call(self.model, request, max(64, body_target * 2))


@dataclass(frozen=True, slots=True)
class CallableSummariser(_TextSummariser):
    """A user's ``async (text, target_tokens) -> summary`` function as a ladder rung.

    ``text`` is the transcript of the span (or the summaries to merge) and
    ``target_tokens`` the size the body should stay under; the file-ID footer
    is added afterwards. Set ``uses_model=False`` to keep the rung outside the
    circuit breaker.
    """

    fn: SummariseFn
    level: int = 1
    input_window: int = DEFAULT_INPUT_WINDOW
    message_chars: int = 0
    summary_chars: int = 0
    uses_model: bool = True

    async def _complete(self, kind: SpanKind, text: str, body_target: int) -> str:
        return await self.fn(text, body_target)
