"""Writing a compaction round: the summary row, its lineage, the context swap and the marker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mnesis.compaction.candidates import CondensedCandidate, SummaryCandidate
from mnesis.models.clock import now_ms
from mnesis.models.ledger import LossLedger
from mnesis.models.message import MessageWithParts
from mnesis.models.summary import SummaryKind
from mnesis.store.base import SummaryRecord
from mnesis.store.immutable import ImmutableStore
from mnesis.store.summary_marker import summary_commit
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["SummaryWriter"]


@dataclass(frozen=True)
class SummaryWriter:
    """Commits leaf and condensed summaries, each in one atomic store call."""

    store: ImmutableStore
    estimator: TokenEstimator
    new_id: Callable[[str], str]
    """A new row ID with the given prefix (``"sum"``, ``"msg"``)."""

    def leaf_record(
        self, session_id: str, candidate: SummaryCandidate, covered: Sequence[MessageWithParts]
    ) -> SummaryRecord:
        """The row of a leaf summary of the messages ``covered``."""
        span = (covered[0].id, covered[-1].id)
        return self._record(session_id, candidate, "leaf", 0, span, len(covered))

    def condensed_record(
        self, session_id: str, candidate: CondensedCandidate, children: Sequence[SummaryRecord]
    ) -> SummaryRecord:
        """The row of a merge of ``children``: one deeper than the deepest of them."""
        span = (children[0].span_start_message_id, children[-1].span_end_message_id)
        depth = max(c.depth for c in children) + 1
        messages = sum(c.source_message_count for c in children)
        return self._record(session_id, candidate, "condensed", depth, span, messages)

    def _record(
        self,
        session_id: str,
        candidate: SummaryCandidate | CondensedCandidate,
        kind: SummaryKind,
        depth: int,
        span: tuple[str | None, str | None],
        messages: int,
    ) -> SummaryRecord:
        return SummaryRecord(
            id=self.new_id("sum"),
            session_id=session_id,
            kind=kind,
            depth=depth,
            level=candidate.compaction_level,
            content=candidate.text,
            token_count=candidate.token_count,
            file_ids=candidate.file_ids,
            span_start_message_id=span[0],
            span_end_message_id=span[1],
            source_message_count=messages,
            created_at=now_ms(),
        )

    async def commit(
        self,
        record: SummaryRecord,
        *,
        sources: list[str],
        parents: list[str],
        replaced: list[tuple[int, str]],
        ledger: LossLedger | None = None,
    ) -> str:
        """Commit ``record`` with its lineage (the messages it summarises or the summaries
        it merges), the context swap of the ``(position, item ID)`` rows it ``replaced``
        and its marker message (with the loss ``ledger``); returns the marker's ID."""
        commit = summary_commit(
            record,
            self.estimator,
            sources=sources,
            parents=parents,
            replaced=replaced,
            marker_id=self.new_id("msg"),
            ledger=ledger,
        )
        await self.store.commit_compaction(commit)
        return commit.marker.message.id
