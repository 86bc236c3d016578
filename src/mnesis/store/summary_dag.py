"""``SummaryDAGStore``: the summary DAG seen as nodes and edges over the store.

A leaf summary points at the messages it covers (``summary_messages``); a
condensed summary points at the summaries it merges (``summary_parents``).
This is the documented module path (``mnesis.store.summary_dag``); nodes are
:class:`~mnesis.models.summary.SummaryNode` (= ``SummaryRecord``) records.

The store is append-only: a node, once written, is never updated or deleted.
"Superseded" therefore means *out of the active context view*: a condensed node
supersedes its children when it is inserted, and :meth:`SummaryDAGStore.mark_superseded`
only takes nodes out of ``context_items``; rows and lineage stay.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnesis.errors import InvalidArgumentError, SummaryNotFoundError
from mnesis.models.summary import SummaryRecord
from mnesis.store.base import NewMessage
from mnesis.store.immutable import ImmutableStore
from mnesis.store.summary_marker import summary_commit
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["SummaryDAGStore"]


class SummaryDAGStore:
    """Read access to the summary DAG of any backend, plus the seeds' writes."""

    def __init__(self, store: ImmutableStore, estimator: TokenEstimator | None = None) -> None:
        self.store = store
        self._estimator = estimator

    async def get_node_by_id(self, summary_id: str) -> SummaryRecord | None:
        """One summary node, or ``None`` if there is none with that ID."""
        try:
            return await self.store.get_summary(summary_id)
        except SummaryNotFoundError:
            return None

    async def get_children(self, summary_id: str) -> list[SummaryRecord]:
        """The summaries a condensed summary merges, in order."""
        return await self.store.get_summaries(await self.store.get_summary_parent_ids(summary_id))

    async def get_source_message_ids(self, summary_id: str) -> list[str]:
        """The messages a summary covers, through every level of condensation, in order."""
        return await self.store.get_source_message_ids_deep(summary_id)

    async def insert_node(
        self,
        node: SummaryRecord,
        *,
        source_message_ids: Sequence[str] = (),
        parent_summary_ids: Sequence[str] = (),
        marker: NewMessage | None = None,
    ) -> SummaryRecord:
        """Write ``node`` with its lineage, its marker message and the context swap, atomically.

        A leaf node names the messages it covers (``source_message_ids``), a condensed
        node the summaries it merges (``parent_summary_ids``). Those of them currently in
        the context view are replaced by the node (at the first one's position); at least
        one must be. ``marker`` is the ``is_summary`` message written with it (default:
        a fresh one carrying a :class:`TextPart` and a ``CompactionMarkerPart``).
        Returns the node with ``message_id`` set.

        Raises :class:`~mnesis.errors.InvalidArgumentError` when neither list is given
        or none of the items is in the context view.
        """
        sources = list(source_message_ids)
        parents = list(parent_summary_ids)
        if not sources and not parents:
            raise InvalidArgumentError(
                "insert_node needs the source_message_ids or parent_summary_ids it covers"
            )
        covered = set(sources) | set(parents)
        items = await self.store.get_context_items(node.session_id)
        replaced = [(i.position, i.item_id) for i in items if i.item_id in covered]
        if not replaced:
            raise InvalidArgumentError(
                f"none of the items summary {node.id} covers is in the context of "
                f"session {node.session_id}"
            )
        if not node.source_message_count:
            node.source_message_count = len(sources) or sum(
                s.source_message_count for s in await self.store.get_summaries(parents)
            )
        estimator = self._estimator or TokenEstimator()
        await self.store.commit_compaction(
            summary_commit(
                node, estimator, sources=sources, parents=parents, replaced=replaced, marker=marker
            )
        )
        return node

    async def mark_superseded(self, summary_ids: Sequence[str]) -> int:
        """Take the nodes out of the active context view; returns how many were in it.

        Nothing is updated or deleted: the nodes, their lineage and their marker
        messages stay (append-only). Nodes already out of the view (for example
        merged by a condensed node inserted with :meth:`insert_node`) are left as they
        are. Raises :class:`~mnesis.errors.SummaryNotFoundError` for an unknown ID.
        """
        ids = list(summary_ids)
        nodes = [await self.store.get_summary(summary_id) for summary_id in ids]
        removed = 0
        for session_id in dict.fromkeys(n.session_id for n in nodes):
            items = await self.store.get_context_items(session_id)
            keep = [(i.item_type, i.item_id, i.tokens) for i in items if i.item_id not in ids]
            if len(keep) != len(items):
                removed += len(items) - len(keep)
                await self.store.replace_context_items(session_id, keep)
        return removed
