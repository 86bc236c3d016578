"""The marker message a summary is committed with (``CompactionCommit.marker``).

An ``is_summary`` assistant message holding the summary's text and a
:class:`~mnesis.models.parts.CompactionMarkerPart`, out of the context view itself (the
summary takes its place there). The compaction engine's writer and
:meth:`~mnesis.store.summary_dag.SummaryDAGStore.insert_node` both commit a summary
through :func:`summary_commit`.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.models.clock import now_ms
from mnesis.models.ids import new_id
from mnesis.models.ledger import LossLedger
from mnesis.models.message import Message
from mnesis.models.parts import CompactionPart, MessagePart, TextPart
from mnesis.models.render import render_summary_record
from mnesis.models.summary import SummaryRecord
from mnesis.store.records import CompactionCommit, NewMessage
from mnesis.tokens.estimator import MESSAGE_OVERHEAD_TOKENS, TokenEstimator

__all__ = ["summary_commit", "summary_context_tokens", "summary_marker"]


def summary_context_tokens(node: SummaryRecord, estimator: TokenEstimator) -> int:
    """The tokens ``node`` takes in the context view: its rendering as a message."""
    return estimator.estimate(render_summary_record(node)) + MESSAGE_OVERHEAD_TOKENS


def summary_marker(
    node: SummaryRecord,
    context_tokens: int,
    *,
    message_id: str,
    created_at: int,
    ledger: LossLedger | None = None,
) -> NewMessage:
    """The marker message of ``node`` (its level clamped to the marker's 1 to 3), with
    the compaction's loss ``ledger`` when given."""
    parts: list[MessagePart] = [
        TextPart(text=node.content, synthetic=True),
        CompactionPart(
            summary_id=node.id,
            level=min(3, max(1, node.level)),
            auto=True,
            compacted_message_count=node.source_message_count,
            ledger=ledger,
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


def summary_commit(
    node: SummaryRecord,
    estimator: TokenEstimator,
    *,
    sources: Sequence[str],
    parents: Sequence[str],
    replaced: Sequence[tuple[int, str]],
    marker: NewMessage | None = None,
    marker_id: str | None = None,
    ledger: LossLedger | None = None,
) -> CompactionCommit:
    """The :class:`CompactionCommit` of ``node`` replacing the ``replaced`` context items.

    ``marker`` defaults to a fresh marker message (ID ``marker_id``, else a new one;
    created when ``node`` was), carrying ``ledger`` (its ``tokens_added`` set to the
    summary's tokens in the view). Sets ``node.message_id`` to the marker's ID.
    """
    context_tokens = summary_context_tokens(node, estimator)
    if ledger is not None:
        ledger.tokens_added = context_tokens
    if marker is None:
        marker = summary_marker(
            node,
            context_tokens,
            message_id=marker_id or new_id("msg"),
            created_at=node.created_at or now_ms(),
            ledger=ledger,
        )
    node.message_id = marker.message.id
    return CompactionCommit(
        summary=node,
        source_message_ids=sources,
        parent_summary_ids=parents,
        replaced=replaced,
        context_tokens=context_tokens,
        marker=marker,
    )
