"""``SummaryDAGStore``: the summary DAG seen as nodes and edges over the store.

A leaf summary points at the messages it covers (``summary_messages``); a
condensed summary points at the summaries it merges (``summary_parents``).
This is the documented module path (``mnesis.store.summary_dag``). Nodes are read as
:class:`~mnesis.models.summary.SummaryNode` (0.4.0's shape); ``insert_node`` takes one or
a :class:`~mnesis.models.summary.SummaryRecord` (the store's own record).

The store is append-only: a node, once written, is never updated or deleted.
"Superseded" therefore means *out of the active context view*: a condensed node
supersedes its children when it is inserted, and :meth:`SummaryDAGStore.mark_superseded`
only takes nodes out of ``context_items``; rows and lineage stay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from mnesis.errors import InvalidArgumentError, SummaryNotFoundError
from mnesis.models.summary import MessageSpan, SummaryNode, SummaryRecord
from mnesis.store.base import NewMessage
from mnesis.store.immutable import ImmutableStore
from mnesis.store.summary_marker import summary_commit
from mnesis.tokens.estimator import TokenEstimator

__all__ = ["SummaryDAGStore"]

N = TypeVar("N", SummaryNode, SummaryRecord)


class SummaryDAGStore:
    """Read access to the summary DAG of any backend, plus the seeds' writes."""

    def __init__(self, store: ImmutableStore, estimator: TokenEstimator | None = None) -> None:
        self.store = store
        self._estimator = estimator

    async def get_node_by_id(self, node_id: str) -> SummaryNode | None:
        """One summary node, or ``None`` if there is none with that ID."""
        try:
            record = await self.store.get_summary(node_id)
        except SummaryNotFoundError:
            return None
        return await self._node(record)

    async def _node(self, record: SummaryRecord) -> SummaryNode:
        parents = (
            await self.store.get_summary_parent_ids(record.id) if record.kind == "condensed" else []
        )
        return SummaryNode.from_record(record, parents)

    async def get_active_nodes(self, session_id: str) -> list[SummaryNode]:
        """The summaries in the session's context view, in context order."""
        items = await self.store.get_context_items(session_id)
        ids = [i.item_id for i in items if i.item_type == "summary"]
        records = {r.id: r for r in await self.store.get_summaries(ids)}
        return [await self._node(records[i]) for i in ids if i in records]

    async def get_latest_node(self, session_id: str) -> SummaryNode | None:
        """The newest summary in the session's context view, or ``None``."""
        nodes = await self.get_active_nodes(session_id)
        return max(nodes, key=lambda n: (n.created_at, n.id)) if nodes else None

    async def get_coverage_gaps(self, session_id: str) -> list[MessageSpan]:
        """The runs of messages in the session's context view that no summary covers
        yet, oldest first, with their sizes."""
        gaps: list[MessageSpan] = []
        run: list[tuple[str, int]] = []
        for item in [*await self.store.get_context_items(session_id), None]:
            if item is not None and item.item_type == "message":
                run.append((item.item_id, item.tokens))
                continue
            if run:
                gaps.append(
                    MessageSpan(
                        start_message_id=run[0][0],
                        end_message_id=run[-1][0],
                        message_count=len(run),
                        estimated_tokens=sum(t for _, t in run),
                    )
                )
                run = []
        return gaps

    async def get_children(self, summary_id: str) -> list[SummaryRecord]:
        """The summaries a condensed summary merges, in order."""
        return await self.store.get_summaries(await self.store.get_summary_parent_ids(summary_id))

    async def get_source_message_ids(self, summary_id: str) -> list[str]:
        """The messages a summary covers, through every level of condensation, in order."""
        return await self.store.get_source_message_ids_deep(summary_id)

    async def insert_node(
        self,
        node: N,
        *,
        id_generator: Callable[[], str] | None = None,
        source_message_ids: Sequence[str] = (),
        parent_summary_ids: Sequence[str] = (),
        marker: NewMessage | None = None,
    ) -> N:
        """Write ``node`` with its lineage, its marker message and the context swap, atomically.

        A leaf node names the messages it covers (``source_message_ids``), a condensed
        node the summaries it merges (``parent_summary_ids``). Those of them currently in
        the context view are replaced by the node (at the first one's position); at least
        one must be. ``marker`` is the ``is_summary`` message written with it (default:
        a fresh one carrying a :class:`TextPart` and a ``CompactionMarkerPart``).
        Returns the node with ``message_id`` set.

        Raises :class:`~mnesis.errors.InvalidArgumentError` when neither list is given
        or none of the items is in the context view.

        A :class:`SummaryNode` (0.4.0's form) may name neither list: it then covers its
        ``parent_node_ids``, else the messages from ``span_start_message_id`` to
        ``span_end_message_id``. ``id_generator`` is accepted for 0.4.0's code (the
        marker's ID is a new ``msg_`` ID).
        """
        sources = list(source_message_ids)
        parents = list(parent_summary_ids)
        if isinstance(node, SummaryNode):
            if not sources and not parents:
                parents = list(node.parent_node_ids)
                if not parents:
                    sources = await self._span(node)
            await self._insert(node.to_record(), sources, parents, marker)
            return node
        await self._insert(node, sources, parents, marker)
        return node

    async def _span(self, node: SummaryNode) -> list[str]:
        ids = [m.id for m in await self.store.get_messages(node.session_id)]
        start, end = node.span_start_message_id, node.span_end_message_id
        if start not in ids or end not in ids:
            return []
        return ids[ids.index(start) : ids.index(end) + 1]

    async def commit_summary_node(
        self,
        node: SummaryNode,
        *,
        id_generator: Callable[[], str] | None = None,
        remove_item_ids: list[str] | None = None,
        supersede_node_ids: list[str] | None = None,
    ) -> SummaryNode:
        """0.4.0's commit: ``node`` replaces the context items ``remove_item_ids``
        (messages or summaries) and the summaries ``supersede_node_ids``, in one
        transaction (see :meth:`insert_node`)."""
        removed = list(remove_item_ids or [])
        kinds = {
            i.item_id: i.item_type for i in await self.store.get_context_items(node.session_id)
        }
        sources = [i for i in removed if kinds.get(i) == "message"]
        parents = [*(supersede_node_ids or []), *(i for i in removed if kinds.get(i) == "summary")]
        return await self.insert_node(
            node,
            id_generator=id_generator,
            source_message_ids=sources,
            parent_summary_ids=list(dict.fromkeys(parents)),
        )

    async def _insert(
        self,
        node: SummaryRecord,
        sources: list[str],
        parents: list[str],
        marker: NewMessage | None,
    ) -> None:
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

    async def mark_superseded(self, node_ids: Sequence[str]) -> int:
        """Take the nodes out of the active context view; returns how many were in it.

        Nothing is updated or deleted: the nodes, their lineage and their marker
        messages stay (append-only). Nodes already out of the view (for example
        merged by a condensed node inserted with :meth:`insert_node`) are left as they
        are. Raises :class:`~mnesis.errors.SummaryNotFoundError` for an unknown ID.
        """
        ids = list(node_ids)
        nodes = [await self.store.get_summary(summary_id) for summary_id in ids]
        removed = 0
        for session_id in dict.fromkeys(n.session_id for n in nodes):
            items = await self.store.get_context_items(session_id)
            keep = [(i.item_type, i.item_id, i.tokens) for i in items if i.item_id not in ids]
            if len(keep) != len(items):
                removed += len(items) - len(keep)
                await self.store.replace_context_items(session_id, keep)
        return removed
