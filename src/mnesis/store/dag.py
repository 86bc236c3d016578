"""``SummaryDAGStore``: the summary DAG seen as nodes and edges over the store.

A leaf summary points at the messages it covers (``summary_messages``); a
condensed summary points at the summaries it merges (``summary_parents``).
"""

from __future__ import annotations

from mnesis.store.base import SummaryRecord
from mnesis.store.immutable import ImmutableStore

__all__ = ["SummaryDAGStore"]


class SummaryDAGStore:
    """Read access to the summary DAG of any backend."""

    def __init__(self, store: ImmutableStore) -> None:
        self.store = store

    async def get_node_by_id(self, summary_id: str) -> SummaryRecord:
        """One summary node; raises :class:`~mnesis.errors.SummaryNotFoundError`."""
        return await self.store.get_summary(summary_id)

    async def get_children(self, summary_id: str) -> list[SummaryRecord]:
        """The summaries a condensed summary merges, in order."""
        return await self.store.get_summaries(await self.store.get_summary_parent_ids(summary_id))

    async def get_source_message_ids(self, summary_id: str) -> list[str]:
        """The messages a summary covers, through every level of condensation, in order."""
        return await self.store.get_source_message_ids_deep(summary_id)
