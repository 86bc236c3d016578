"""How many rows hold each term of a ``relevance`` search (the weights of its
combinations) and how many rows it searches, on PostgreSQL.

A term's rows are counted over text and context together, in the searched sessions
only, at most ``TERM_COUNT_CAP`` of them (a weight, not a result). GIN hands over a
term's rows only after reading all of its postings, so counting a word common in the
whole database costs its every posting, however few rows the count then reads.
History is append-only: a term counted to the cap in a session stays there, so such
counts are kept (at most ``_KEPT`` of them, least recently used out) and not asked
again while the session's first row is the same (a session purged and imported again
starts with a new one). Counts below the cap are asked every time.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from mnesis.store.base import SearchFilter
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import fetch_one
from mnesis.store.postgres.search_sql import PART_TSV, render_tsquery
from mnesis.store.search_query import TERM_COUNT_CAP, SearchQuery, Term

__all__ = ["TermCounts"]

_KEPT = 4096
"""Saturated counts kept per store."""
_SPANNED = 50
"""Most sessions whose key spans are read (more, or all: the table's largest key)."""
_Key = tuple[tuple[str, ...], str]


class TermCounts:
    """Capped term counts of searched sessions, those at the cap kept (see module)."""

    def __init__(self) -> None:
        self._saturated: OrderedDict[_Key, tuple[int, ...]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._saturated)

    async def counts(
        self, conn: Conn, terms: tuple[Term, ...], where: SearchFilter
    ) -> tuple[list[int], int]:
        """Each term's rows (at most ``TERM_COUNT_CAP``) and about how many parts the
        search reads (the key span of its sessions' parts), in one statement."""
        ids = where.session_ids
        spanned = ids is not None and len(ids) <= _SPANNED
        sessions = tuple(ids) if ids is not None and spanned else ()
        queries = [render_tsquery(SearchQuery(all_of=(term,))) for term in terms]
        kept = [self._saturated.get((sessions, q)) if spanned else None for q in queries]
        selects: list[str] = []
        params: list[Any] = []
        for query, firsts in zip(queries, kept, strict=True):
            if firsts is not None:
                selects.append("NULL::bigint")
                continue
            scope = "" if ids is None else " AND p.session_id = ANY(%s)"
            selects.append(
                f"(SELECT count(*) FROM (SELECT 1 FROM message_parts p WHERE {PART_TSV} "
                f"@@ to_tsquery('english', %s){scope} LIMIT {TERM_COUNT_CAP}) c)"
            )
            params += [query] if ids is None else [query, list(ids)]
        if spanned:
            for bound in ("MIN", "MAX"):
                each = ", ".join(
                    f"(SELECT {bound}(key) FROM message_parts WHERE session_id = %s)"
                    for _ in sessions
                )
                selects.append(f"ARRAY[{each}]::bigint[]")
                params += list(sessions)
        else:
            selects.append("(SELECT COALESCE(MAX(key), 0) FROM message_parts)")
        row = await fetch_one(conn, f"SELECT {', '.join(selects)}", params)
        assert row is not None  # A SELECT without FROM gives one row.
        if not spanned:
            return [int(c) for c in row[:-1]], int(row[-1])
        firsts, lasts = tuple(row[-2]), row[-1]
        if any(k is not None and k != firsts for k in kept):
            # A kept session's first row changed (purged and written again).
            for key in [k for k in self._saturated if k[0] == sessions]:
                del self._saturated[key]
            return await self.counts(conn, terms, where)
        counts = []
        for query, cached, count in zip(queries, kept, row[:-2], strict=True):
            key = (sessions, query)
            if cached is not None:
                self._saturated.move_to_end(key)
                counts.append(TERM_COUNT_CAP)
                continue
            counts.append(int(count))
            if count >= TERM_COUNT_CAP:
                self._saturated[key] = firsts
                if len(self._saturated) > _KEPT:
                    self._saturated.popitem(last=False)
        total = sum(
            last - first + 1
            for first, last in zip(firsts, lasts, strict=True)
            if first is not None and last is not None
        )
        return counts, total
