"""The payload of each event, as a ``TypedDict`` (0.4.0's ``mnesis.events.payloads``).

Handlers receive ``(event, payload)``; the payload is a plain ``dict`` with the keys
declared here (``NotRequired`` ones only where the publisher has them). Annotate a
handler's payload with one of these to let a type checker see its keys::

    def on_done(event: MnesisEvent, payload: CompactionCompletedPayload) -> None:
        print(payload["level_used"], payload["tokens_after"])

``tests/compat/test_event_payloads.py`` checks real sessions and map runs publish
exactly these keys. Five events are declared for 0.4.0's code but never published
(``session.updated``, ``session.deleted``, ``message.updated``, ``part.created``,
``part.updated``: the store is append-only; sessions are never deleted).
"""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11
# counts NotRequired keys as required (``__required_keys__``).
from typing import Any, NotRequired, TypedDict

__all__ = [
    "CompactionCompletedPayload",
    "CompactionFailedPayload",
    "CompactionTriggeredPayload",
    "DoomLoopDetectedPayload",
    "LlmRetryPayload",
    "MapCompletedPayload",
    "MapItemCompletedPayload",
    "MapStartedPayload",
    "MessageCreatedPayload",
    "PruneCompletedPayload",
    "SessionClosedPayload",
    "SessionCreatedPayload",
]


class SessionCreatedPayload(TypedDict):
    """``session.created``: a new session was stored."""

    session_id: str
    model: str


class SessionClosedPayload(TypedDict):
    """``session.closed``: the session was closed (its history stays)."""

    session_id: str


class MessageCreatedPayload(TypedDict):
    """``message.created``: a message was appended."""

    session_id: str
    message_id: str
    role: str


class CompactionTriggeredPayload(TypedDict):
    """``compaction.triggered``: a compaction run starts (or, in worker mode, is queued)."""

    session_id: str
    reason: str
    """``soft_threshold``, ``hard_threshold`` or ``manual``."""
    tokens: NotRequired[int]
    """The context size that crossed the soft threshold."""
    job_id: NotRequired[Any]
    """Worker mode: the queued job."""


class CompactionCompletedPayload(TypedDict):
    """``compaction.completed``: the fields of the run's ``CompactionResult``, flat, and
    the same as one dict under ``result``."""

    session_id: str
    summary_message_id: str | None
    summary_id: str | None
    level_used: int
    compacted_message_count: int
    summary_token_count: int
    tokens_before: int
    tokens_after: int
    elapsed_ms: float
    pruned_tool_outputs: int
    pruned_tokens: int
    condensed_count: int
    rounds: int
    error: str | None
    result: dict[str, Any]
    stop_reason: NotRequired[str]
    """Why the run stopped (``CompactionResult.stop_reason``); not in 0.4.0."""
    stop_detail: NotRequired[str]
    target_tokens: NotRequired[int]
    tokens_left: NotRequired[int]
    protected_tail_tokens: NotRequired[int]


class CompactionFailedPayload(CompactionCompletedPayload):
    """``compaction.failed``: as ``compaction.completed``; ``error`` says why."""


class PruneCompletedPayload(TypedDict):
    """``prune.completed``: tool outputs were tombstoned."""

    session_id: str
    pruned_count: int
    pruned_tokens: int


class DoomLoopDetectedPayload(TypedDict):
    """``doom_loop.detected``: the same tool call repeated ``count`` times in a row."""

    session_id: str
    tool_name: str
    input: dict[str, Any]
    count: int


class LlmRetryPayload(TypedDict):
    """``llm.retry``: a model call is retried. A session's retry (``SessionConfig.retry``)
    carries ``session_id`` and ``delay``; an operator's carries ``operator``, ``run_id`` and
    the item's ``index``."""

    attempt: int
    """The attempt about to start (2 for the first retry)."""
    error: str
    session_id: NotRequired[str]
    delay: NotRequired[float]
    """Seconds waited before the attempt."""
    operator: NotRequired[str]
    run_id: NotRequired[str]
    index: NotRequired[int]


class MapStartedPayload(TypedDict):
    """``map.started``: an LLMMap / AgenticMap run starts."""

    operator: str
    """``llm_map`` or ``agentic_map``."""
    run_id: str
    total: int | None
    """Inputs (``None`` for an iterable of unknown length)."""
    model: str
    concurrency: int
    to_run: NotRequired[int]
    """AgenticMap: items still to run (a resumed run skips finished ones)."""
    resumed: NotRequired[bool]


class MapItemCompletedPayload(TypedDict):
    """``map.item_completed``: one input finished (successfully or not)."""

    operator: str
    run_id: str
    index: int
    success: bool
    attempts: int
    completed: int
    """Items finished so far."""
    total: int | None
    session_id: NotRequired[str | None]
    """AgenticMap: the item's sub-session."""


class MapCompletedPayload(TypedDict):
    """``map.completed``: every input finished."""

    operator: str
    run_id: str
    total: int
    completed: int
    failed: int
    elapsed_ms: int
