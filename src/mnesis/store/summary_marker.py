"""The marker message a summary is committed with (``CompactionCommit.marker``).

An ``is_summary`` assistant message holding the summary's text and a
:class:`~mnesis.models.parts.CompactionMarkerPart`, out of the context view itself (the
summary takes its place there). The compaction engine's writer and
:meth:`~mnesis.store.summary_dag.SummaryDAGStore.insert_node` both write this one.
"""

from __future__ import annotations

from mnesis.models.message import Message
from mnesis.models.parts import CompactionPart, MessagePart, TextPart
from mnesis.models.render import render_summary_record
from mnesis.models.summary import SummaryRecord
from mnesis.store.records import NewMessage
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["summary_context_tokens", "summary_marker"]


def summary_context_tokens(node: SummaryRecord, estimator: TokenEstimator) -> int:
    """The tokens ``node`` takes in the context view: its rendering as a message."""
    return estimator.estimate(render_summary_record(node)) + MESSAGE_OVERHEAD_TOKENS


def summary_marker(
    node: SummaryRecord, context_tokens: int, *, message_id: str, created_at: int
) -> NewMessage:
    """The marker message of ``node`` (its level clamped to the marker's 1 to 3)."""
    parts: list[MessagePart] = [
        TextPart(text=node.content, synthetic=True),
        CompactionPart(
            summary_id=node.id,
            level=min(3, max(1, node.level)),
            auto=True,
            compacted_message_count=node.source_message_count,
        ),
    ]
    message = Message(
        id=message_id,
        session_id=node.session_id,
        role="assistant",
        created_at=created_at,
        is_summary=True,
        token_estimate=context_tokens,
    )
    return NewMessage(message, parts, [node.token_count, 0], in_context=False)
