"""Reading a session's loss ledger back: one row per compaction, oldest first.

A summary's ledger is the one its marker message stores; a prune pass's is read off its
tombstones (every output pruned at one instant is one pass), its entities extracted from
the outputs kept in the store, in one streaming pass of bounded memory
(:class:`LedgerCollector`; :func:`read_ledger` pages through the session's messages).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from mnesis.compaction.ledger import EntityIndex, extract_entities, tool_texts
from mnesis.models.ledger import LossLedger
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import CompactionPart, ToolPart
from mnesis.store.immutable import ImmutableStore
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["PAGE", "LedgerCollector", "LedgerRow", "read_ledger"]

PAGE = 500
"""Messages read per store call."""


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One compaction and what it took out of the view."""

    created_at: int
    """When it happened (ms since the epoch)."""
    ledger: LossLedger
    summary_id: str | None = None
    """The summary it wrote (``None`` for a prune pass)."""
    level: int = 0
    """The summary's level (1-3; 0 for a prune pass)."""


@dataclass
class _Prune:
    index: EntityIndex = field(default_factory=EntityIndex)
    message_ids: dict[str, None] = field(default_factory=dict)
    tokens: int = 0


@dataclass
class LedgerCollector:
    """Collects ledger rows from a session's messages, fed in ``seq`` order."""

    estimator: TokenEstimator = field(default_factory=TokenEstimator)
    rows: list[LedgerRow] = field(default_factory=list)
    without_ledger: int = 0
    """Summary markers written before the ledger existed."""
    _prunes: dict[int, _Prune] = field(default_factory=dict)

    def page(self, messages: list[MessageWithParts]) -> None:
        """Take in a page of stored messages."""
        for m in messages:
            self.message(m)

    def message(self, m: MessageWithParts) -> None:
        """Take in one stored message (summary markers included)."""
        for part in m.parts:
            if isinstance(part, CompactionPart):
                if part.ledger is None:
                    self.without_ledger += 1
                else:
                    self.rows.append(
                        LedgerRow(m.message.created_at, part.ledger, part.summary_id, part.level)
                    )
            elif isinstance(part, ToolPart) and part.status.compacted_at is not None:
                group = self._prunes.setdefault(part.status.compacted_at, _Prune())
                group.message_ids.setdefault(m.id, None)
                output = part.output or ""
                group.tokens += self.estimator.estimate(output)
                for text in tool_texts(part):
                    group.index.add(m.id, extract_entities(text, prose=False))

    def finish(self) -> list[LedgerRow]:
        """Every row, oldest first (prune passes read off their tombstones)."""
        rows = list(self.rows)
        for at, group in self._prunes.items():
            ledger = LossLedger(
                kind="prune",
                removed_message_ids=list(group.message_ids),
                tokens_removed=group.tokens,
            )
            rows.append(LedgerRow(at, group.index.ledger(ledger, "")))
        rows.sort(key=lambda r: (r.created_at, r.ledger.kind != "prune"))
        return rows


async def read_ledger(store: ImmutableStore, session_id: str) -> tuple[list[LedgerRow], int]:
    """The ledger of ``session_id``, oldest first, and how many summaries were written
    without one (before the ledger existed)."""
    await store.get_session(session_id)
    collector = LedgerCollector()
    after = 0
    while True:
        page = await store.get_messages(session_id, after_seq=after, limit=PAGE)
        if not page:
            break
        # Off the event loop: extracting entities from a page of pruned outputs is CPU.
        await asyncio.to_thread(collector.page, page)
        after += len(page)  # seq is gap-free within a session, markers included
        if len(page) < PAGE:
            break
    rows = await asyncio.to_thread(collector.finish)
    return rows, collector.without_ledger
