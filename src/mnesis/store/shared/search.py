"""A backend's ``search`` collaborator, engine-neutral (:class:`BaseSearch`):
``search_text`` and ``scan_text`` as the store interface takes them, written once (the
keywords and the empty session filter, which matches nothing); each engine's subclass
gives the search, the scan and ``replies_to`` themselves."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Literal

from mnesis.store.records import SearchFilter, SearchHit
from mnesis.store.search_query import SearchQuery
from mnesis.store.shared.statements import DB, StorePart

__all__ = ["BaseSearch", "TextScope"]

TextScope = Literal["messages", "summaries"]


class BaseSearch(StorePart[DB]):
    """Ranked search, newest-first scans and replies over messages and summaries; the
    keyword fronts of an engine's :meth:`_search` and :meth:`_scan`."""

    async def search_text(
        self,
        *,
        query: SearchQuery,
        scope: TextScope,
        where: SearchFilter,
        limit: int,
        offset: int = 0,
    ) -> list[SearchHit]:
        if where.session_ids is not None and not where.session_ids:
            return []
        return await self._search(query, scope, where, limit, offset)

    async def scan_text(
        self, *, scope: TextScope, where: SearchFilter, before_key: int | None, limit: int
    ) -> list[SearchHit]:
        if where.session_ids is not None and not where.session_ids:
            return []
        return await self._scan(scope, where, before_key, limit)

    @abstractmethod
    async def _search(
        self, query: SearchQuery, scope: TextScope, where: SearchFilter, limit: int, offset: int
    ) -> list[SearchHit]:
        """``search_text`` with a session filter that is None or names sessions."""

    @abstractmethod
    async def _scan(
        self, scope: TextScope, where: SearchFilter, before_key: int | None, limit: int
    ) -> list[SearchHit]:
        """``scan_text`` with a session filter that is None or names sessions."""

    @abstractmethod
    async def replies_to(self, message_ids: Sequence[str]) -> dict[str, SearchHit]:
        """See :meth:`~mnesis.store.base.StoreBackend.replies_to`."""
