"""Message parts: the typed pieces a message is made of.

``MessagePart`` is a union discriminated on ``type``. Parts are immutable
history; the only field that changes after a part is stored is the lifecycle of
a tool call (:class:`ToolStatus`), including its ``compacted_at`` tombstone.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    ConfigDict,
    Field,
    TypeAdapter,
    field_serializer,
    field_validator,
)

from mnesis.models.checked import CheckedModel
from mnesis.models.ledger import LossLedger, pack_ledger, unpack_ledger
from mnesis.models.limits import INT64_MAX, INT64_MIN
from mnesis.models.tokens import TokenUsage

__all__ = [
    "PART_TYPES",
    "AgentPart",
    "CompactionPart",
    "FilePart",
    "FileRefPart",
    "MessagePart",
    "PatchPart",
    "ReasoningPart",
    "RetryPart",
    "SnapshotPart",
    "StepFinishPart",
    "StepStartPart",
    "SubtaskPart",
    "TextPart",
    "ToolPart",
    "ToolState",
    "ToolStatus",
    "WireFields",
    "part_adapter",
]

ToolState = Literal["pending", "running", "completed", "error"]

DEFAULT_PROTECTED_TOOLS = frozenset({"skill"})
"""Tools whose outputs the pruner keeps (the default of ``CompactionConfig.protected_tools``)."""

Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
"""An integer a 64-bit storage column holds."""
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]
"""A non-negative integer a 64-bit storage column holds."""


def _non_empty(value: str) -> str:
    # Not ``min_length``: a length constraint makes pydantic reject lone surrogates
    # at construction, while the store checks reject them with a typed error.
    if not value:
        raise ValueError("must not be empty")
    return value


NonEmptyStr = Annotated[str, AfterValidator(_non_empty)]


WireFields = dict[str, dict[str, Any]]
"""Provider fields a recorded part keeps so that it renders back exactly as it was
recorded: per wire format (``"openai"``, ``"anthropic"``, ``"responses"``), what that
format's renderer puts back (see :mod:`mnesis.context.intake`)."""


class _Part(CheckedModel):
    model_config = ConfigDict(validate_assignment=False)

    id: str | None = None
    """Assigned by the store when the part is appended."""


class TextPart(_Part):
    """Plain text written by the user or the model."""

    type: Literal["text"] = "text"
    text: str
    synthetic: bool = False
    ignored: bool = False
    wire: WireFields | None = None
    """Provider fields of a recorded message (``record_messages``); None otherwise."""


class ReasoningPart(_Part):
    """Model reasoning. Stored for audit; sent back to a model only in the wire format
    it was recorded from (an Anthropic ``thinking`` block with its signature, a Responses
    ``reasoning`` item), which ``wire`` keeps."""

    type: Literal["reasoning"] = "reasoning"
    text: str
    wire: WireFields | None = None
    """Provider fields of a recorded reasoning block or item; None otherwise."""


class ToolStatus(CheckedModel):
    """Lifecycle of a tool call. ``compacted_at`` (Unix ms) marks a tombstone."""

    state: ToolState = "completed"
    compacted_at: Int64 | None = None
    started_at: Int64 | None = None
    completed_at: Int64 | None = None


class ToolPart(_Part):
    """A tool call together with its result, so the two can never be separated."""

    type: Literal["tool"] = "tool"
    tool_name: NonEmptyStr
    tool_call_id: NonEmptyStr
    input: dict[str, Any] = Field(default_factory=dict)
    output: str | None = None
    error_message: str | None = None
    title: str | None = None
    status: ToolStatus = Field(default_factory=ToolStatus)
    wire: WireFields | None = None
    """Provider fields of a recorded call and its result; None otherwise."""

    @property
    def compacted_at(self) -> int | None:
        """Unix ms at which the output was tombstoned, or None."""
        return self.status.compacted_at

    @property
    def is_protected(self) -> bool:
        """Whether the pruner leaves this output alone under the default configuration
        (``CompactionConfig.protected_tools``: ``skill``)."""
        return self.tool_name in DEFAULT_PROTECTED_TOOLS


class PatchPart(_Part):
    """A code change: content hash and the files it touched (0.4.0's diff and line
    counts optional)."""

    type: Literal["patch"] = "patch"
    hash: str = ""
    files: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("files", "files_changed")
    )
    """Also accepted as ``files_changed`` (0.4.0's name), which reads it back."""
    unified_diff: str = ""
    additions: Count = 0
    deletions: Count = 0

    @property
    def files_changed(self) -> list[str]:
        """0.4.0's name of :attr:`files`."""
        return self.files


class FilePart(_Part):
    """An attachment referenced by URL (image, PDF, ...)."""

    type: Literal["file"] = "file"
    mime: str
    filename: str | None = None
    url: str


class FileRefPart(_Part):
    """A large file kept out of context: content hash plus a structural summary."""

    type: Literal["file_ref"] = "file_ref"
    content_id: str
    file_id: str | None = None
    path: str
    file_type: str = "unknown"
    token_count: Count = 0
    exploration_summary: str = ""


class SubtaskPart(_Part):
    """A task delegated to a sub-agent."""

    type: Literal["subtask"] = "subtask"
    prompt: str
    description: str = ""
    agent: str = "default"


class CompactionPart(_Part):
    """Marker written with every compaction commit."""

    type: Literal["compaction"] = "compaction"
    summary_id: str = Field(validation_alias=AliasChoices("summary_id", "summary_node_id"))
    """Also accepted as ``summary_node_id`` (0.4.0's name), which reads it back."""
    level: int = Field(default=1, ge=1, le=3)
    auto: bool = True
    compacted_message_count: Count = 0
    compacted_token_count: Count = 0
    ledger: LossLedger | None = None
    """What the compaction took out of the view (see :mod:`mnesis.models.ledger`);
    dumped (and stored) in its compact form, read back from either form."""

    @field_validator("ledger", mode="before")
    @classmethod
    def _unpack_ledger(cls, value: Any) -> Any:
        return unpack_ledger(value)

    @field_serializer("ledger")
    def _pack_ledger(self, ledger: LossLedger | None) -> dict[str, Any] | None:
        return None if ledger is None else pack_ledger(ledger)

    @property
    def summary_node_id(self) -> str:
        """0.4.0's name of :attr:`summary_id`."""
        return self.summary_id


class StepStartPart(_Part):
    """Start of a model step."""

    type: Literal["step_start"] = "step_start"
    snapshot: str | None = Field(
        default=None, validation_alias=AliasChoices("snapshot", "snapshot_ref")
    )
    """Also accepted as ``snapshot_ref`` (0.4.0's name), which reads it back."""
    step_index: Count = 0

    @property
    def snapshot_ref(self) -> str | None:
        """0.4.0's name of :attr:`snapshot`."""
        return self.snapshot


class StepFinishPart(_Part):
    """End of a model step, with its cost and usage."""

    type: Literal["step_finish"] = "step_finish"
    reason: str = "stop"
    cost: float = Field(default=0.0, allow_inf_nan=False)
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    step_index: Count = 0
    snapshot_ref: str | None = None
    tokens_used: TokenUsage | None = None
    """0.4.0's field, kept as given; mnesis fills :attr:`tokens`."""


class SnapshotPart(_Part):
    """A workspace snapshot reference."""

    type: Literal["snapshot"] = "snapshot"
    snapshot: str


class AgentPart(_Part):
    """Names the agent that produced the message."""

    type: Literal["agent"] = "agent"
    name: str


class RetryPart(_Part):
    """A failed model attempt that was retried (or gave up)."""

    type: Literal["retry"] = "retry"
    attempt: int = Field(default=1, ge=1, le=INT64_MAX)
    error: str


MessagePart = Annotated[
    TextPart
    | ReasoningPart
    | ToolPart
    | PatchPart
    | FilePart
    | FileRefPart
    | SubtaskPart
    | CompactionPart
    | StepStartPart
    | StepFinishPart
    | SnapshotPart
    | AgentPart
    | RetryPart,
    Field(discriminator="type"),
]

part_adapter: TypeAdapter[MessagePart] = TypeAdapter(MessagePart)

PART_TYPES: tuple[type[_Part], ...] = (
    TextPart,
    ReasoningPart,
    ToolPart,
    PatchPart,
    FilePart,
    FileRefPart,
    SubtaskPart,
    CompactionPart,
    StepStartPart,
    StepFinishPart,
    SnapshotPart,
    AgentPart,
    RetryPart,
)
