"""What summarisers produce and the helpers they share.

A candidate is a summary before it is committed. Every candidate, leaf or
condensed, ends with the bounded ``[LCM File IDs: ...]`` footer of the file IDs
it covers; its body is sized so body plus footer fits the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mnesis.compaction.file_ids import file_ids_footer, strip_footer
from mnesis.models.message import MessageWithParts
from mnesis.models.render import render_message_text
from mnesis.store.base import SummaryRecord
from mnesis.tokens.estimator import TokenEstimator

__all__ = [
    "INPUT_WINDOW_SHARE",
    "MIN_MESSAGES_TO_SUMMARISE",
    "CondensedCandidate",
    "SummaryCandidate",
    "SummaryTarget",
    "body_budget",
    "cap_input",
    "looks_like_summary",
    "merged_file_ids",
    "render_summaries",
    "render_transcript",
    "with_footer",
]

MIN_MESSAGES_TO_SUMMARISE = 3
INPUT_WINDOW_SHARE = 0.75
"""A summariser reads at most this share of its input window."""


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


@dataclass(slots=True)
class CondensedCandidate:
    """A condensed summary before it is committed."""

    text: str
    token_count: int
    compaction_level: int = 1
    file_ids: list[str] = field(default_factory=list)
    parent_node_ids: list[str] = field(default_factory=list)
    """0.4.0's field: the summaries merged (filled by its callers; the commit records
    the lineage itself)."""


@dataclass(frozen=True, slots=True)
class SummaryTarget:
    """How large a summary may be, and how to measure it.

    ``usable`` is the context budget's usable size; leaf summaries never aim
    above it (condensed ones leave it ``None``).
    """

    target_tokens: int
    footer_cap: int
    estimator: TokenEstimator
    usable: int | None = None

    @property
    def capped_tokens(self) -> int:
        """``target_tokens``, no larger than ``usable``."""
        if self.usable is None:
            return self.target_tokens
        return min(self.target_tokens, self.usable)


def render_transcript(messages: Sequence[MessageWithParts], per_message_chars: int = 0) -> str:
    """Messages as a plain transcript for a summarisation prompt."""
    lines = []
    for message in messages:
        text = render_message_text(message)
        if per_message_chars and len(text) > per_message_chars:
            text = text[:per_message_chars] + " …"
        lines.append(f"[{message.role} {message.id}]\n{text}")
    return "\n\n".join(lines)


def render_summaries(summaries: Sequence[SummaryRecord], chars: int = 0) -> str:
    """Summaries (footers stripped, each cut to ``chars`` if set) as one merge input."""
    blocks = []
    for s in summaries:
        body = strip_footer(s.content)
        if chars and len(body) > chars:
            body = body[:chars] + " …"
        blocks.append(f"[summary {s.id} ({s.kind}, {s.source_message_count} messages)]\n{body}")
    return "\n\n".join(blocks)


def merged_file_ids(summaries: Sequence[SummaryRecord]) -> list[str]:
    """The file IDs of all ``summaries``, oldest first, without duplicates."""
    merged: dict[str, None] = {}
    for s in summaries:
        for fid in s.file_ids:
            merged.setdefault(fid, None)
    return list(merged)


def cap_input(
    messages: Sequence[MessageWithParts], estimator: TokenEstimator, input_window: int
) -> list[MessageWithParts]:
    """The leading messages that fit the input share of the window (at least a few)."""
    cap = int(input_window * INPUT_WINDOW_SHARE)
    kept: list[MessageWithParts] = []
    used = 0
    for message in messages:
        cost = message.message.token_estimate or estimator.estimate_message(message)
        if kept and len(kept) >= MIN_MESSAGES_TO_SUMMARISE and used + cost > cap:
            break
        kept.append(message)
        used += cost
    return kept


def _footer(file_ids: list[str], target_tokens: int, footer_cap: int, e: TokenEstimator) -> str:
    return file_ids_footer(
        file_ids, cap=footer_cap, max_tokens=max(16, target_tokens // 3), estimator=e
    )


def body_budget(
    file_ids: list[str], target_tokens: int, footer_cap: int, estimator: TokenEstimator
) -> int:
    """Tokens left for the body once the footer of ``file_ids`` is paid for."""
    footer = _footer(file_ids, target_tokens, footer_cap, estimator)
    return max(16, target_tokens - estimator.estimate(footer) - 4)


def with_footer(
    body: str,
    file_ids: list[str],
    target_tokens: int,
    footer_cap: int,
    estimator: TokenEstimator,
) -> str:
    """``body`` followed by the footer of ``file_ids`` (if any)."""
    footer = _footer(file_ids, target_tokens, footer_cap, estimator)
    return f"{body.strip()}\n\n{footer}" if footer else body.strip()


def looks_like_summary(text: str) -> bool:
    """Reject garbage: answers that are mostly symbols, control or invisible characters."""
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return False
    junk = sum(1 for c in visible if not c.isprintable() or c in "\ufffd\u202e\u200b")
    wordy = sum(1 for c in visible if c.isalnum())
    return junk / len(visible) <= 0.05 and wordy / len(visible) >= 0.5
