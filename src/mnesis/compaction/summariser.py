"""The ``Summariser`` protocol and its kinds: model levels, extractive, a user's callable.

A summariser is one rung of the escalation ladder. It turns a span of messages
into a leaf summary (:meth:`Summariser.summarise`) and a run of summaries into a
condensed one (:meth:`Summariser.condense`), or returns ``None`` to hand the
span to the next rung. Rungs that call a model (``uses_model``) sit behind the
engine's circuit breaker; a rung that never returns ``None`` (the extractive
summariser) ends every ladder.

The text summarisers (a model level or a user's callable) live in
:mod:`mnesis.compaction.text_summariser` and are importable from here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mnesis.compaction.candidates import (
    CondensedCandidate,
    SummaryCandidate,
    SummaryTarget,
    body_budget,
    merged_file_ids,
    with_footer,
)
from mnesis.compaction.extractive import extractive_condense, extractive_summary
from mnesis.compaction.file_ids import extract_file_ids_from_messages, strip_footer
from mnesis.compaction.text_summariser import (
    DEFAULT_INPUT_WINDOW,
    CallableSummariser,
    LLMCall,
    ModelSummariser,
    SummariseFn,
)
from mnesis.models.message import MessageWithParts
from mnesis.store.base import SummaryRecord
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "CONDENSE_LEVEL3_MAX_TOKENS",
    "DEFAULT_INPUT_WINDOW",
    "EXTRACTIVE_WINDOW",
    "CallableSummariser",
    "ExtractiveSummariser",
    "LLMCall",
    "ModelSummariser",
    "SummariseFn",
    "Summariser",
]

CONDENSE_LEVEL3_MAX_TOKENS = 512
EXTRACTIVE_WINDOW = 64_000
"""The extractive summariser has no window; bounded spans keep each pass cheap
and each leaf specific enough to be useful when expanded."""


class Summariser(Protocol):
    """One rung of the compaction ladder, for leaf and for condensed summaries."""

    @property
    def level(self) -> int:
        """The compaction level recorded on what this rung produces."""
        ...

    @property
    def uses_model(self) -> bool:
        """True if this rung calls a model (the circuit breaker guards it)."""
        ...

    @property
    def input_window(self) -> int:
        """Input tokens this rung can read; a leaf span is at most 75 % of the first rung's."""
        ...

    async def summarise(
        self, messages: Sequence[MessageWithParts], target: SummaryTarget
    ) -> SummaryCandidate | None:
        """A leaf summary of (a leading part of) ``messages``, or None to escalate."""
        ...

    async def condense(
        self, summaries: Sequence[SummaryRecord], target: SummaryTarget
    ) -> CondensedCandidate | None:
        """One summary of consecutive ``summaries`` (oldest first), or None to escalate."""
        ...


@dataclass(frozen=True, slots=True)
class ExtractiveSummariser:
    """The offline extractive summariser: no model, never escalates, always within target.

    At level 3 (the last rung of every model ladder) the text carries a notice
    and a condensed summary is capped at ``min(target, 512)`` tokens; at level 1
    (compaction model ``"extractive"``) neither applies.
    """

    level: int = 3
    input_window: int = EXTRACTIVE_WINDOW

    @property
    def uses_model(self) -> bool:
        """Always False."""
        return False

    async def summarise(
        self, messages: Sequence[MessageWithParts], target: SummaryTarget
    ) -> SummaryCandidate:
        """See :meth:`summarise_now`."""
        return self.summarise_now(messages, target)

    async def condense(
        self, summaries: Sequence[SummaryRecord], target: SummaryTarget
    ) -> CondensedCandidate:
        """See :meth:`condense_now`."""
        return self.condense_now(summaries, target)

    def summarise_now(
        self, messages: Sequence[MessageWithParts], target: SummaryTarget
    ) -> SummaryCandidate:
        """A leaf summary of all ``messages`` within the target.

        File IDs of *all* messages go into the footer, even those whose prose
        did not fit.
        """
        estimator = target.estimator
        file_ids = extract_file_ids_from_messages(messages)
        target_tokens = max(32, target.capped_tokens)
        notice = (
            "[Deterministic summary (level 3): extracted without a model]"
            if self.level == 3
            else ""
        )
        body = extractive_summary(
            messages,
            target_tokens=self._body_tokens(file_ids, target_tokens, target, notice),
            estimator=estimator,
        )
        text = with_footer(
            f"{notice}\n{body}" if notice else body,
            file_ids,
            target_tokens,
            target.footer_cap,
            estimator,
        )
        return SummaryCandidate(
            text=text,
            token_count=estimator.estimate(text),
            span_start_message_id=messages[0].id,
            span_end_message_id=messages[-1].id,
            compaction_level=self.level,
            messages_covered=len(messages),
            file_ids=file_ids,
        )

    def condense_now(
        self, summaries: Sequence[SummaryRecord], target: SummaryTarget
    ) -> CondensedCandidate:
        """A section-by-section merge of ``summaries`` within the target."""
        estimator = target.estimator
        target_tokens = target.capped_tokens
        if self.level == 3:
            target_tokens = min(target_tokens, CONDENSE_LEVEL3_MAX_TOKENS)
        file_ids = merged_file_ids(summaries)
        notice = (
            f"[Condensed deterministically from {len(summaries)} summaries (level 3)]"
            if self.level == 3
            else ""
        )
        body = extractive_condense(
            [strip_footer(s.content) for s in summaries],
            target_tokens=self._body_tokens(file_ids, target_tokens, target, notice),
            estimator=estimator,
        )
        if notice:
            body = f"{notice}\n{body}"
        text = with_footer(body, file_ids, target_tokens, target.footer_cap, estimator)
        return CondensedCandidate(text, estimator.estimate(text), self.level, file_ids)

    @staticmethod
    def _body_tokens(
        file_ids: list[str], target_tokens: int, target: SummaryTarget, notice: str
    ) -> int:
        estimator: TokenEstimator = target.estimator
        body = body_budget(file_ids, target_tokens, target.footer_cap, estimator)
        return max(8, body - estimator.estimate(notice) - 2)
