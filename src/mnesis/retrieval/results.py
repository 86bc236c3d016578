"""Typed results of describe, grep, expand and expand_query."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

from mnesis.models.ledger import LedgerEntity

__all__ = [
    "DescribeResult",
    "ExpandQueryResult",
    "ExpandResult",
    "ExpandedMessage",
    "ExpandedSummary",
    "FileDescription",
    "GrepMatch",
    "GrepResult",
    "LedgerBrief",
    "MessageDescription",
    "SummaryDescription",
]

SUMMARY_FIELDS = tuple(
    "id depth level created_at token_count content source_message_count "
    "span_start_message_id span_end_message_id".split()
)
"""What a summary's description (and the report's DAG node) copies from its record."""
HIT_FIELDS = ("kind", "id", "session_id", "part_id", "role", "created_at", "rank")
"""What a grep match copies from the store's search hit."""
FILE_FIELDS = tuple("content_id path file_type token_count byte_size exploration_summary".split())
"""What a file's description copies from its reference."""


def copied(source: object, names: Iterable[str]) -> dict[str, Any]:
    """``source``'s attributes ``names``, by name (keywords of a record that shares them)."""
    return {name: getattr(source, name) for name in names}


class LedgerBrief(BaseModel):
    """A summary's loss ledger in brief: what writing it took out of the context view.

    The whole ledger is listed by ``mnesis compactions SESSION``; every dropped entity
    can still be read in the covered IDs (``lcm_expand`` the summary, or ``lcm_grep``
    the value)."""

    tokens_removed: int
    """Tokens of the messages (leaf) or summaries (condensed) it replaced in the view."""
    tokens_added: int
    """Tokens of the summary that replaced them."""
    entities_seen: int
    """Distinct entities (paths, commands, identifiers, numbers, URLs, decisions) in what
    it replaced."""
    entities_kept: int
    """Of those, the ones the summary still holds verbatim."""
    dropped_total: int
    """Entities no longer readable in the view."""
    dropped_by_kind: dict[str, int] = Field(default_factory=dict)
    """Dropped entities per kind, among those the ledger lists (at most 100 per kind;
    ``dropped_total`` counts all)."""
    dropped: list[LedgerEntity] = Field(default_factory=list)
    """The first few dropped entities, taken in turn from each kind, each with IDs that
    hold it."""
    more_dropped: int = 0
    """Dropped entities not shown in ``dropped``."""
    covered_ids: list[str] = Field(default_factory=list)
    """The first few messages (leaf) or summaries (condensed) it took out of the view."""
    covered_count: int = 0
    """All of them."""
    see: str = ""
    """Where the rest is."""


class SummaryDescription(BaseModel):
    """What ``describe`` says about a summary ID."""

    kind: Literal["summary"] = "summary"
    id: str
    session_id: str
    summary_kind: Literal["leaf", "condensed"]
    depth: int
    level: int
    created_at: int
    token_count: int
    content: str
    child_summary_ids: list[str] = Field(default_factory=list)
    """Summaries this one merges (condensed only)."""
    fan_in: int = 0
    """How many summaries this one merges (``len(child_summary_ids)``; 0 for a leaf).
    Condensation merges a fixed number of same-depth summaries, so a summary of depth
    ``d`` covers about ``fan_in ** d`` leaves."""
    parent_summary_ids: list[str] = Field(default_factory=list)
    """Condensed summaries that merged this one."""
    source_message_count: int = 0
    span_start_message_id: str | None = None
    span_end_message_id: str | None = None
    direct_source_message_ids: list[str] = Field(default_factory=list)
    """Messages a leaf covers directly (empty for condensed: see its children)."""
    file_ids: list[str] = Field(default_factory=list)
    in_context: bool = False
    ledger: LedgerBrief | None = None
    """What writing it dropped from the view (``None`` for a summary written before the
    loss ledger existed)."""


class FileDescription(BaseModel):
    """What ``describe`` says about a file ID."""

    kind: Literal["file"] = "file"
    id: str
    content_id: str
    path: str
    file_type: str
    token_count: int
    byte_size: int | None = None
    exploration_summary: str = ""


class MessageDescription(BaseModel):
    """What ``describe`` says about a message ID."""

    kind: Literal["message"] = "message"
    id: str
    session_id: str
    role: str
    created_at: int
    token_estimate: int
    is_summary: bool
    part_types: list[str]
    preview: str
    in_context: bool
    covering_summary_id: str | None = None
    leaf_summary_ids: list[str] = Field(default_factory=list)


DescribeResult = SummaryDescription | FileDescription | MessageDescription


class GrepMatch(BaseModel):
    """One search hit."""

    kind: Literal["message", "summary"]
    id: str
    """Message ID or summary ID."""
    session_id: str
    part_id: str | None = None
    role: str | None = None
    created_at: int
    snippet: str
    rank: float = 0.0
    covering_summary_id: str | None = None
    """For a message no longer in context: the summary in context that covers it."""
    leaf_summary_id: str | None = None
    """For a message no longer in context: the leaf summary that covers it directly.
    ``expand`` it (or the message ID) to read the original turn in one call, however
    deep the summary in context is."""
    in_context: bool = False
    matched_terms: list[str] = Field(default_factory=list)
    """Why it matched: the query terms found in its own text (regex: the matched text)."""
    context_terms: list[str] = Field(default_factory=list)
    """Query terms found only in its neighbour context (speaker, date, previous turns)."""
    context_from: str | None = None
    """Where the context terms were found: ``"previous turn (user)"``,
    ``"2 turns back (assistant)"`` or ``"speaker/date"``."""
    duplicates: int = 0
    """How many near-identical hits were collapsed into this one."""
    duplicate_ids: list[str] = Field(default_factory=list)
    """IDs of the collapsed hits (at most ten)."""
    found_by: Literal["lexical", "semantic", "both", "regex"] = "lexical"
    """Which path found it: the lexical ranking, the dense (embedding) search of the
    ``semantic`` extra, both of them, or a regex scan."""


class GrepResult(BaseModel):
    """The result of ``grep``: ordered matches, grouped by covering summary."""

    query: str
    mode: Literal["full_text", "regex"]
    scope: Literal["messages", "summaries", "both"]
    matches: list[GrepMatch]
    groups: dict[str, list[str]] = Field(default_factory=dict)
    """Matched IDs by where they stand: the ID of the summary in context that covers them,
    ``"context"`` (raw in context), ``"summary"`` (summary matches) or ``"uncovered"``."""
    next_cursor: str | None = None
    truncated: bool = False
    timed_out: bool = False


class ExpandedSummary(BaseModel):
    """A summary reached by ``expand``."""

    id: str
    summary_kind: Literal["leaf", "condensed"]
    depth: int
    level: int
    content: str
    token_count: int
    reached_at_depth: int


class ExpandedMessage(BaseModel):
    """A source message reached by ``expand``, rendered as text."""

    id: str
    role: str
    created_at: int
    text: str
    token_count: int


class ExpandResult(BaseModel):
    """The result of ``expand``."""

    summary_id: str
    """The summary opened (for a message ID: its leaf summary; ``""`` if none covers it)."""
    message_id: str | None = None
    """The message ID ``expand`` was given, if it was one."""
    summaries: list[ExpandedSummary] = Field(default_factory=list)
    messages: list[ExpandedMessage] = Field(default_factory=list)
    estimated_tokens: int = 0
    truncated: bool = False
    unexpanded_summary_ids: list[str] = Field(default_factory=list)
    """Summaries past the depth limit or the token cap: expand them next."""
    next_cursor: str | None = None
    """When truncated: pass it back (same summary, depth, include_messages) for the rest."""


class ExpandQueryResult(BaseModel):
    """The answer of a bounded sub-agent expansion."""

    answer: str
    cited_ids: list[str] = Field(default_factory=list)
    tool_calls: int = 0
    truncated: bool = False
    sub_session_id: str | None = None
