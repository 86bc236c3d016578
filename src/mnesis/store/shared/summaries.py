"""A backend's ``summaries`` collaborator, engine-neutral (:class:`BaseSummaries`): the
context view, summaries, their lineage and the compaction lock row as single statements,
written once for both engines (each engine's subclass adds the multi-statement work: the
compaction commit, the covering summaries)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from mnesis.models.clock import now_ms
from mnesis.store.lease import LeaseRow
from mnesis.store.records import AppendedMessage, CompactionCommit, ContextItem, SummaryRecord
from mnesis.store.shared.commit import CONTEXT_TOKEN_TOTAL
from mnesis.store.shared.lineage import (
    LOCK_ACQUIRE,
    LOCK_LIST,
    LOCK_OWNER,
    LOCK_RELEASE,
    lock_args,
)
from mnesis.store.shared.rows import summary_record
from mnesis.store.shared.sql import DOWN_CTE, SUMMARY_COLUMNS, select_list
from mnesis.store.shared.statements import DB, StorePart

__all__ = ["BaseSummaries"]

_CONTEXT_ITEM_COLUMNS = (
    "ci.position",
    "ci.item_type",
    "COALESCE(ci.message_id, ci.summary_id)",
    "ci.tokens",
    "m.role",
)


class BaseSummaries(StorePart[DB]):
    """``get_context_items``, ``context_token_total``, ``get_summaries``,
    ``messages_in_context``, the lineage reads and the compaction lock row
    (``store/sqlite/summaries.py``, ``store/postgres/summaries.py``).

    An engine gives :meth:`_ids_in`, :meth:`commit_compaction` and
    :meth:`covering_context_summaries`, and sets :attr:`ENUMS_AS_TEXT` (its enum columns
    are read as text), :attr:`JSON_AS_TEXT` (its JSON columns are read as text to
    decode), and may override :meth:`_summary_items` (where the summaries of the context
    are read from).
    """

    ENUMS_AS_TEXT: ClassVar[bool] = False
    JSON_AS_TEXT: ClassVar[bool] = True

    @abstractmethod
    def _ids_in(self, column: str, ids: Sequence[str]) -> tuple[str, Any]:
        """The clause "``column`` is one of ``ids``" (one ``?``) and its argument."""

    @abstractmethod
    async def commit_compaction(self, commit: CompactionCommit) -> AppendedMessage:
        """Write a summary, its lineage, the context swap and the marker atomically."""

    @abstractmethod
    async def covering_context_summaries(
        self, session_id: str, message_ids: Sequence[str]
    ) -> dict[str, str | None]:
        """For each message: the summary in the current context that covers it."""

    def _summary_items(self) -> str:
        """The ``FROM`` source, aliased ``ci``, of a read of the context's summaries."""
        return "context_items ci "

    async def get_summaries(self, summary_ids: Sequence[str]) -> list[SummaryRecord]:
        if not summary_ids:
            return []
        clause, ids = self._ids_in("id", summary_ids)
        columns = select_list(SUMMARY_COLUMNS, ("kind",) if self.ENUMS_AS_TEXT else ())
        rows = await self.db.rows(f"SELECT {columns} FROM summaries WHERE {clause}", (ids,))
        by_id = {r[0]: summary_record(r, json_text=self.JSON_AS_TEXT) for r in rows}
        return [by_id[i] for i in summary_ids if i in by_id]

    async def messages_in_context(self, session_id: str, message_ids: Sequence[str]) -> set[str]:
        if not message_ids:
            return set()
        clause, ids = self._ids_in("message_id", message_ids)
        rows = await self.db.rows(
            f"SELECT message_id FROM context_items WHERE session_id = ? AND {clause}",
            (session_id, ids),
        )
        return {r[0] for r in rows}

    async def get_context_items(
        self,
        session_id: str,
        *,
        item_type: Literal["message", "summary"] | None = None,
        newest_first: bool = False,
        before_position: int | None = None,
        limit: int | None = None,
    ) -> list[ContextItem]:
        where = ["ci.session_id = ?"]
        args: list[Any] = [session_id]
        if item_type is not None:
            # A literal, not a parameter: SQLite only uses the partial summary index
            # when it can see the WHERE clause matches it.
            where.append(f"ci.item_type = '{item_type}'")
        if before_position is not None:
            where.append("ci.position < ?")
            args.append(before_position)
        limit_clause = ""
        if limit is not None:
            limit_clause = " LIMIT ?"
            args.append(int(limit))
        as_text = ("ci.item_type", "m.role") if self.ENUMS_AS_TEXT else ()
        source = self._summary_items() if item_type == "summary" else "context_items ci "
        sql = (
            f"SELECT {select_list(_CONTEXT_ITEM_COLUMNS, as_text)} FROM {source}"
            "LEFT JOIN messages m ON m.id = ci.message_id "
            f"WHERE {' AND '.join(where)} ORDER BY ci.position "
            f"{'DESC' if newest_first else 'ASC'}{limit_clause}"
        )
        return [ContextItem(r[0], r[1], r[2], r[3], r[4]) for r in await self.db.rows(sql, args)]

    async def context_token_total(self, session_id: str) -> int:
        return int((await self.db.rows(CONTEXT_TOKEN_TOTAL, (session_id,)))[0][0])

    async def acquire_compaction_lock(
        self, session_id: str, owner: str, ttl_seconds: float, *, steal_from: str | None = None
    ) -> bool:
        args = lock_args(session_id, owner, ttl_seconds, steal_from, now_ms())
        return await self.db.change(LOCK_ACQUIRE, args) == 1

    async def compaction_lock_owner(self, session_id: str) -> str | None:
        found = await self.db.rows(LOCK_OWNER, (session_id,))
        return str(found[0][0]) if found else None

    async def release_compaction_lock(self, session_id: str, owner: str) -> None:
        await self.db.change(LOCK_RELEASE, (session_id, owner))

    async def compaction_leases(self) -> list[LeaseRow]:
        return [
            LeaseRow(str(r[0]), str(r[1]), int(r[2])) for r in await self.db.rows(LOCK_LIST, ())
        ]

    # lineage: one first-column read each -------------------------------------
    async def _first_column(self, sql: str, args: Sequence[Any]) -> list[str]:
        return [r[0] for r in await self.db.rows(sql, args)]

    async def get_summary_source_ids(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT message_id FROM summary_messages WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )

    async def get_summary_parent_ids(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )

    async def get_summaries_merging(self, summary_id: str) -> list[str]:
        return await self._first_column(
            "SELECT summary_id FROM summary_parents WHERE parent_summary_id = ? "
            "ORDER BY summary_id",
            (summary_id,),
        )

    async def get_leaf_summaries_of_message(self, message_id: str) -> list[str]:
        return await self._first_column(
            "SELECT summary_id FROM summary_messages WHERE message_id = ? ORDER BY summary_id",
            (message_id,),
        )

    async def get_source_message_ids_deep(self, summary_id: str) -> list[str]:
        return await self._first_column(
            f"{DOWN_CTE} SELECT m.id FROM messages m WHERE m.id IN "
            "(SELECT sm.message_id FROM summary_messages sm JOIN down "
            "ON sm.summary_id = down.id) ORDER BY m.seq",
            (summary_id,),
        )
