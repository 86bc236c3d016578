"""Messages and the results of session calls.

This is also the documented module path of the message vocabulary: the part types
(``TextPart``, ``ToolPart``, ``ToolStatus``, ``FileRefPart``, ``MessagePart``,
``CompactionMarkerPart``), ``TokenUsage`` and ``ContextBudget`` are re-exported here
from :mod:`mnesis.models.parts`, :mod:`mnesis.models.tokens` and
:mod:`mnesis.models.budget`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from mnesis.models.budget import ContextBudget
from mnesis.models.clock import now_ms
from mnesis.models.limits import INT64_MAX, INT64_MIN
from mnesis.models.parts import (
    CompactionPart,
    FileRefPart,
    MessagePart,
    PatchPart,
    ReasoningPart,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.models.tokens import TokenUsage

__all__ = [
    "CompactionResult",
    "CompactionStopReason",
    "ContextBreakdown",
    "FinishReason",
    "Message",
    "MessageWithParts",
    "RecordResult",
    "Role",
    "TextDelta",
    "TurnComplete",
    "TurnResult",
    "TurnSnapshot",
]
__all__ += [  # the documented re-exports of the message vocabulary
    "CompactionMarkerPart",
    "ContextBudget",
    "FileRefPart",
    "MessagePart",
    "TextPart",
    "TokenUsage",
    "ToolPart",
    "ToolStatus",
]
__all__ += [  # 0.4.0's names at this path (issue 31)
    "MessageError",
    "PatchPart",
    "PruneResult",
    "ReasoningPart",
    "StepFinishPart",
    "StepStartPart",
]

CompactionMarkerPart = CompactionPart
"""The seeds' name of the marker part written with every compaction commit."""

Role = Literal["system", "user", "assistant", "tool"]

CompactionStopReason = Literal[
    "done",
    "nothing_to_do",
    "round_cap",
    "irreducible",
    "model_cooldown",
    "lock_held",
    "aborted",
    "failed",
]
"""Why a compaction run stopped: ``done`` (the context is at or under the drain target),
``nothing_to_do`` (it was already, and nothing was written), ``round_cap`` (the
``max_compaction_rounds`` cap was reached with ``tokens_left`` above the target),
``irreducible`` (no round could shrink it further: ``protected_tail_tokens`` says how
much the fresh tail alone holds), ``model_cooldown`` (it stayed above the target while
the compaction model was in its failure cooldown), ``lock_held`` (another compactor
holds the session), ``aborted`` (the caller's abort), ``failed`` (an error: ``error``)."""


class FinishReason(StrEnum):
    """Why the model stopped."""

    STOP = "stop"
    MAX_TOKENS = "max_tokens"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    ERROR = "error"


class MessageError(BaseModel):
    """0.4.0's error record of a failed message (see :attr:`Message.error`)."""

    code: str
    message: str
    retriable: bool = False
    provider_error_code: str | None = None


class Message(BaseModel):
    """One stored message (a user turn, an assistant turn or a summary)."""

    id: str
    session_id: str
    role: Role
    created_at: int = Field(default_factory=now_ms, ge=INT64_MIN, le=INT64_MAX)
    """Unix milliseconds (now, when not given)."""
    agent: str = "default"
    model_id: str | None = None
    provider_id: str | None = None
    is_summary: bool = False
    parent_id: str | None = None
    tokens: TokenUsage | None = None
    cost: float = Field(default=0.0, allow_inf_nan=False)
    finish_reason: str | None = None
    token_estimate: int = Field(default=0, ge=0, le=INT64_MAX)
    """Estimated tokens of the message as rendered into a context."""
    error: MessageError | None = None
    """0.4.0's field, accepted for compatibility and not stored: a failed turn is
    stored as a ``RetryPart`` holding its error."""
    mode: str | None = None
    """0.4.0's field, accepted for compatibility and not stored."""


class MessageWithParts(BaseModel):
    """A message together with its ordered parts."""

    message: Message
    parts: list[MessagePart] = Field(default_factory=list)

    @property
    def id(self) -> str:
        """The message ID."""
        return self.message.id

    @property
    def role(self) -> Role:
        """The message role."""
        return self.message.role

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_parts(self) -> list[ToolPart]:
        """The tool parts, in order."""
        return [p for p in self.parts if isinstance(p, ToolPart)]

    @property
    def is_summary(self) -> bool:
        """Whether the message is a summary (``message.is_summary``)."""
        return self.message.is_summary

    @property
    def model_id(self) -> str | None:
        """The model that wrote the message (``message.model_id``)."""
        return self.message.model_id

    @property
    def tokens(self) -> TokenUsage | None:
        """The token usage recorded on the message (``message.tokens``)."""
        return self.message.tokens

    def text_content(self) -> str:
        """0.4.0's name of :attr:`text`: the concatenated text parts."""
        return self.text


class CompactionResult(BaseModel):
    """What a compaction run did. ``level_used`` is 0 when nothing was committed."""

    session_id: str
    summary_message_id: str | None = None
    """The marker message of the last summary committed."""
    summary_id: str | None = None
    """The last leaf summary committed."""
    level_used: int = 0
    """The highest level (1, 2 or 3) of the summaries committed."""
    compacted_message_count: int = 0
    """Messages taken out of the context view into leaf summaries."""
    summary_token_count: int = 0
    """The tokens of the last summary committed."""
    tokens_before: int = 0
    """The context view's size before the run (sum of its items' estimates)."""
    tokens_after: int = 0
    """The context view's size after the run."""
    elapsed_ms: float = 0.0
    """Wall time of the run, in milliseconds."""
    pruned_tool_outputs: int = 0
    """Tool outputs tombstoned by the pruner (still stored, out of the context)."""
    pruned_tokens: int = 0
    """Tokens the pruner's tombstones saved."""
    condensed_count: int = 0
    """Condensed summaries committed (adjacent summaries merged into one)."""
    rounds: int = 0
    """Rounds that committed something (at most ``max_compaction_rounds``)."""
    error: str | None = None
    """Why the run failed or did not run (the lease held elsewhere); ``None`` otherwise."""
    stop_reason: CompactionStopReason | None = None
    """Why the run stopped (set on every finished run; see :data:`CompactionStopReason`)."""
    stop_detail: str = ""
    """The stop reason as a sentence, with its numbers."""
    target_tokens: int = 0
    """The size the run drained towards (the drain target; 0 if it never measured)."""
    tokens_left: int = 0
    """Tokens still above ``target_tokens`` when the run stopped."""
    protected_tail_tokens: int = 0
    """The size of the protected fresh tail when the run stopped."""


class TurnResult(BaseModel):
    """The result of :meth:`MnesisSession.send`."""

    message_id: str
    user_message_id: str | None = None
    text: str
    finish_reason: FinishReason | str = FinishReason.STOP
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    cost: float = 0.0
    compaction_triggered: bool = False
    compaction_result: CompactionResult | None = None
    doom_loop_detected: bool = False
    tool_calls: list[ToolPart] = Field(default_factory=list)


class PruneResult(BaseModel):
    """What a tool-output prune pass did."""

    pruned_count: int = 0
    """Tool outputs tombstoned."""
    pruned_tokens: int = 0
    """Tokens the tombstones saved."""
    candidates_scanned: int = 0
    """Completed, unprotected tool outputs the pass looked at."""
    candidate_tokens: int = 0
    """Tokens of the outputs beyond the protect window (pruned only above
    ``prune_minimum_tokens``)."""


class RecordResult(BaseModel):
    """The result of :meth:`MnesisSession.record` and :meth:`MnesisSession.record_messages`."""

    user_message_id: str
    """The turn's user message (for a continuation, the open turn's)."""
    assistant_message_id: str
    """The last assistant message stored (its last round); ``""`` when none was."""
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    compaction_triggered: bool = False
    doom_loop_detected: bool = False
    message_ids: list[str] = Field(default_factory=list)
    """Every message stored, in order (the user message, then one per round)."""


class ContextBreakdown(BaseModel):
    """Where the tokens of an assembled context go. ``summary`` (0.4.0's name) and
    ``summaries`` are the same number; either may be given."""

    system_prompt: int = 0
    summaries: int = 0
    summary: int = 0
    messages: int = 0
    tool_outputs: int = 0
    total: int = 0
    budget: int = 0

    @model_validator(mode="before")
    @classmethod
    def _one_summary_count(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("summary" in data) != ("summaries" in data):
            count = data.get("summary", data.get("summaries"))
            data = {**data, "summary": count, "summaries": count}
        return data


class TurnSnapshot(BaseModel):
    """One turn as seen by :meth:`MnesisSession.history`. ``context_tokens`` (0.4.0's
    name) and ``context`` are the same breakdown; either may be given."""

    turn_index: int
    user_message_id: str = ""
    assistant_message_id: str = ""
    role: Role = "assistant"
    """The role of the message that ended the turn (0.4.0's field)."""
    context: ContextBreakdown = Field(default_factory=ContextBreakdown)
    context_tokens: ContextBreakdown = Field(default_factory=ContextBreakdown)
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    compaction_triggered: bool = False
    compact_result: CompactionResult | None = None
    """The compaction that ran before this turn's model call, if one did."""
    created_at: int = 0

    @model_validator(mode="before")
    @classmethod
    def _one_breakdown(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("context" in data) != ("context_tokens" in data):
            breakdown = data.get("context", data.get("context_tokens"))
            data = {**data, "context": breakdown, "context_tokens": breakdown}
        return data


class TextDelta(BaseModel):
    """A piece of streamed assistant text."""

    type: Literal["text_delta"] = "text_delta"
    message_id: str = ""
    text: str


class TurnComplete(BaseModel):
    """The last item of :meth:`MnesisSession.stream`: the finished turn."""

    type: Literal["turn_complete"] = "turn_complete"
    result: TurnResult
