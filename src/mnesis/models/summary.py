"""Summary-DAG nodes and large-file references (the records the store reads and writes).

This is the documented module path ``mnesis.models.summary``: :class:`SummaryRecord` is
the node of the summary DAG as the store keeps it; :class:`SummaryNode` is the same node
in 0.4.0's shape (``SummaryDAGStore`` takes and returns it); ``FileReference`` is a
content-addressed large file. ``SummaryRecord`` and ``FileReference`` are re-exported by
:mod:`mnesis.store.base`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from mnesis.models.clock import now_ms

__all__ = [
    "FileReference",
    "MessageSpan",
    "SummaryKind",
    "SummaryNode",
    "SummaryRecord",
    "file_id_for",
]

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


_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_HEX = frozenset("0123456789abcdef")


def _is_digest(text: str) -> bool:
    return len(text) == 64 and set(text) <= _HEX


def file_id_for(content_id: str) -> str:
    """The stable ``file_`` ID of a sha256 hex digest: its first 130 bits in Crockford base32."""
    if not _is_digest(content_id):
        from mnesis.errors import InvalidArgumentError

        raise InvalidArgumentError(f"{content_id[:80]!r} is not a sha256 hex digest")
    value = int.from_bytes(bytes.fromhex(content_id)[:17], "big") >> 6
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "file_" + "".join(reversed(chars))


class FileReference(BaseModel):
    """A content-addressed large file (the raw content is not stored).

    Built by keywords, or positionally in the order of the fields (the store's rows).
    ``file_id`` may be left out (0.4.0's form) when ``content_id`` is a sha256 hex
    digest: it is derived from it."""

    content_id: str
    """The hash of the file's bytes (one reference per content)."""
    file_id: str = ""
    path: str
    file_type: str
    token_count: int
    """The (sampled) estimate of the whole file's tokens."""
    exploration_summary: str = ""
    byte_size: int | None = None
    session_id: str | None = None
    created_at: int = 0

    def __init__(self, *args: Any, **data: Any) -> None:
        names = list(type(self).model_fields)
        if len(args) > len(names):
            raise TypeError(f"FileReference takes at most {len(names)} positional arguments")
        data.update(zip(names, args, strict=False))
        content_id = data.get("content_id")
        if not data.get("file_id") and isinstance(content_id, str) and _is_digest(content_id):
            data["file_id"] = file_id_for(content_id)
        super().__init__(**data)


class MessageSpan(BaseModel):
    """A run of consecutive messages: where it starts and ends, how many, how large."""

    start_message_id: str
    end_message_id: str
    message_count: int
    estimated_tokens: int


class SummaryNode(BaseModel):
    """A node of the summary DAG in 0.4.0's shape: ``level`` is its depth in the DAG (0
    for a leaf), ``compaction_level`` the level (1, 2 or 3) that wrote it,
    ``parent_node_ids`` the summaries a condensed node merges. ``model_id`` and
    ``provider_id`` are not stored (empty when read back)."""

    id: str
    session_id: str
    level: int = 0
    kind: SummaryKind = "leaf"
    span_start_message_id: str
    span_end_message_id: str
    content: str
    token_count: int
    created_at: int = Field(default_factory=now_ms)
    parent_node_id: str | None = None
    parent_node_ids: list[str] = Field(default_factory=list)
    model_id: str = ""
    provider_id: str = ""
    compaction_level: int = 1

    @classmethod
    def from_record(cls, record: SummaryRecord, parent_ids: list[str] | None = None) -> SummaryNode:
        """The 0.4.0 view of a stored summary (``parent_ids``: the summaries it merges)."""
        parents = list(parent_ids or [])
        return cls(
            id=record.id,
            session_id=record.session_id,
            level=record.depth,
            kind=record.kind,
            span_start_message_id=record.span_start_message_id or "",
            span_end_message_id=record.span_end_message_id or "",
            content=record.content,
            token_count=record.token_count,
            created_at=record.created_at,
            parent_node_id=parents[0] if parents else None,
            parent_node_ids=parents,
            compaction_level=record.level,
        )

    def to_record(self) -> SummaryRecord:
        """The record the store writes for this node."""
        return SummaryRecord(
            id=self.id,
            session_id=self.session_id,
            kind=self.kind,
            depth=self.level,
            level=min(3, max(1, self.compaction_level)),
            content=self.content,
            token_count=self.token_count,
            span_start_message_id=self.span_start_message_id or None,
            span_end_message_id=self.span_end_message_id or None,
            created_at=self.created_at,
        )
