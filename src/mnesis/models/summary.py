"""Summary-DAG nodes and large-file references (the records the store reads and writes).

This is the documented module path ``mnesis.models.summary``: ``SummaryNode`` (the
seeds' name) is :class:`SummaryRecord`, the node of the summary DAG; ``FileReference``
is a content-addressed large file. Both are re-exported by :mod:`mnesis.store.base`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

__all__ = ["FileReference", "MessageSpan", "SummaryKind", "SummaryNode", "SummaryRecord"]

SummaryKind = Literal["leaf", "condensed"]


@dataclass(slots=True)
class SummaryRecord:
    """A node of the summary DAG."""

    id: str
    session_id: str
    kind: SummaryKind
    depth: int
    """0 for a leaf; a condensed summary is one deeper than its deepest child."""
    level: int
    """The compaction level (1, 2 or 3) that wrote it."""
    content: str
    token_count: int
    file_ids: list[str] = field(default_factory=list)
    message_id: str | None = None
    """The marker message it was committed with."""
    span_start_message_id: str | None = None
    span_end_message_id: str | None = None
    source_message_count: int = 0
    created_at: int = 0


SummaryNode = SummaryRecord
"""The seeds' name of a summary DAG node."""


@dataclass(slots=True)
class FileReference:
    """A content-addressed large file (the raw content is not stored)."""

    content_id: str
    """The hash of the file's bytes (one reference per content)."""
    file_id: str
    path: str
    file_type: str
    token_count: int
    """The (sampled) estimate of the whole file's tokens."""
    exploration_summary: str = ""
    byte_size: int | None = None
    session_id: str | None = None
    created_at: int = 0


class MessageSpan(BaseModel):
    """A run of consecutive messages: where it starts and ends, how many, how large."""

    start_message_id: str
    end_message_id: str
    message_count: int
    estimated_tokens: int
