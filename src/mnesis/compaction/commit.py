"""Writing a compaction round: the summary row, its lineage, the context swap and the marker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mnesis.compaction.candidates import CondensedCandidate, SummaryCandidate
from mnesis.models.clock import now_ms
from mnesis.models.ledger import LossLedger
from mnesis.models.message import MessageWithParts
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

    async def commit_leaf(
        self,
        session_id: str,
        candidate: SummaryCandidate,
        covered: Sequence[MessageWithParts],
        replaced: list[tuple[int, str]],
        ledger: LossLedger | None = None,
    ) -> tuple[str, str]:
        """Commit a leaf summary of ``covered`` (with its loss ``ledger`` in the marker);
        returns ``(summary_id, marker_message_id)``."""
        record = SummaryRecord(
            id=self.new_id("sum"),
            session_id=session_id,
            kind="leaf",
            depth=0,
            level=candidate.compaction_level,
            content=candidate.text,
            token_count=candidate.token_count,
            file_ids=candidate.file_ids,
            span_start_message_id=covered[0].id,
            span_end_message_id=covered[-1].id,
            source_message_count=len(covered),
            created_at=now_ms(),
        )
        marker = await self._commit(
            record,
            source_ids=[m.id for m in covered],
            parent_ids=[],
            replaced=replaced,
            ledger=ledger,
        )
        return record.id, marker

    async def commit_condensed(
        self,
        session_id: str,
        candidate: CondensedCandidate,
        children: Sequence[SummaryRecord],
        replaced: list[tuple[int, str]],
        ledger: LossLedger | None = None,
    ) -> tuple[str, str]:
        """Commit a merge of ``children`` (with its loss ``ledger`` in the marker);
        returns ``(summary_id, marker_message_id)``."""
        record = SummaryRecord(
            id=self.new_id("sum"),
            session_id=session_id,
            kind="condensed",
            depth=max(c.depth for c in children) + 1,
            level=candidate.compaction_level,
            content=candidate.text,
            token_count=candidate.token_count,
            file_ids=candidate.file_ids,
            span_start_message_id=children[0].span_start_message_id,
            span_end_message_id=children[-1].span_end_message_id,
            source_message_count=sum(c.source_message_count for c in children),
            created_at=now_ms(),
        )
        marker = await self._commit(
            record,
            source_ids=[],
            parent_ids=[c.id for c in children],
            replaced=replaced,
            ledger=ledger,
        )
        return record.id, marker

    async def _commit(
        self,
        record: SummaryRecord,
        *,
        source_ids: list[str],
        parent_ids: list[str],
        replaced: list[tuple[int, str]],
        ledger: LossLedger | None,
    ) -> str:
        commit = summary_commit(
            record,
            self.estimator,
            sources=source_ids,
            parents=parent_ids,
            replaced=replaced,
            marker_id=self.new_id("msg"),
            ledger=ledger,
        )
        await self.store.commit_compaction(commit)
        return commit.marker.message.id
