"""Full-text search (``tsquery``, ``ts_rank_cd``) and newest-first scans of history
(``PostgresStore.search``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.postgres.db import Conn, PostgresDatabase
from mnesis.store.postgres.newest import DEFAULT_WINDOWS, newest_group_keys
from mnesis.store.postgres.relevance import relevance_keys
from mnesis.store.postgres.rows import DOWN_CTE, fetch
from mnesis.store.postgres.search_sql import PART_TSV, filter_sql, render_tsquery
from mnesis.store.postgres.term_counts import TermCounts
from mnesis.store.search_query import SearchQuery
from mnesis.store.search_text import speaker_lines
from mnesis.store.shared.hit_contexts import (
    PG_HIT_NEIGHBOURS,
    contexts_of,
    hits_of,
    keys_of,
    wanted,
)
from mnesis.store.shared.search import BaseSearch, TextScope

__all__ = ["PostgresSearch", "render_tsquery"]

RANK_WEIGHTS = "{0.35, 0.3, 0.4, 1.0}"
"""``ts_rank_cd`` weights of D, C, B, A: tool input/output (D) counts 0.35 of
conversation text and summaries (A), a part's neighbour context (C) 0.3, as the BM25
column weights on SQLite."""
_RANK = "-ts_rank_cd(%s::real[], {col}, to_tsquery('english', %s), 1)"
"""Lower is better (as SQLite's ``bm25``); normalisation 1 damps long documents."""


class PostgresSearch(BaseSearch[PostgresDatabase]):
    """Ranked search and scans over messages and summaries (``PostgresStore.search``)."""

    search_windows: tuple[int, ...] = DEFAULT_WINDOWS
    """Sizes of the windows of newest rows a ``newest_first`` search reads before
    asking the GIN index (empty: always the index); results do not depend on them."""

    def __init__(self, db: PostgresDatabase) -> None:
        super().__init__(db)
        self.term_counts = TermCounts()
        """Term counts a ``relevance`` search keeps, one set per store (see
        :mod:`~mnesis.store.postgres.term_counts`)."""

    async def _search(
        self, query: SearchQuery, scope: TextScope, where: SearchFilter, limit: int, offset: int
    ) -> list[SearchHit]:
        if query.newest_first or (query.relevance and scope == "messages"):
            return await self._newest_of_groups(query, scope, where, limit, offset)
        tsquery = render_tsquery(query)
        params: list[Any] = [RANK_WEIGHTS, tsquery]
        if scope == "messages":
            cte = ""
            if where.under_summary is not None:
                cte = DOWN_CTE
                params.insert(0, where.under_summary)
            params.append(tsquery)
            # The index holds text and context together; recheck the part searched.
            own, ranked = "AND p.search_tsv @@ to_tsquery('english', %s)", "p.search_tsv"
            if query.context_only:
                own, ranked = "AND p.context_tsv @@ to_tsquery('english', %s)", "p.context_tsv"
            elif query.include_context:
                own, ranked = "", PART_TSV
            if own:
                params.append(tsquery)
            clauses, args = filter_sql(where, scope)
            sql = (
                f"{cte} SELECT p.key, p.id, p.message_id, p.session_id, p.text_content, "
                f"m.role::text, m.created_at, {_RANK.format(col=ranked)} AS rank, "
                "p.tool_name, p.part_type::text "
                "FROM message_parts p JOIN messages m ON m.id = p.message_id "
                f"WHERE {PART_TSV} @@ to_tsquery('english', %s) {own} AND NOT m.is_summary "
                f"{clauses} ORDER BY rank, p.key LIMIT %s OFFSET %s"
            )
        else:
            params.append(tsquery)
            clauses, args = filter_sql(where, scope)
            sql = (
                "SELECT s.key, NULL, s.id, s.session_id, s.content, NULL, s.created_at, "
                f"{_RANK.format(col='s.search_tsv')} AS rank, NULL, NULL FROM summaries s "
                "WHERE s.search_tsv @@ to_tsquery('english', %s) "
                f"{clauses} ORDER BY rank, s.key LIMIT %s OFFSET %s"
            )
        params += [*args, limit, offset]
        kind: Literal["message", "summary"] = "message" if scope == "messages" else "summary"

        async def _ranked(conn: Conn) -> list[SearchHit]:
            rows = await fetch(conn, sql, params)
            return hits_of(kind, rows, await _contexts(conn, rows))

        return await self.db.read(_ranked)

    async def _newest_of_groups(
        self,
        query: SearchQuery,
        scope: Literal["messages", "summaries"],
        where: SearchFilter,
        limit: int,
        offset: int,
    ) -> list[SearchHit]:
        """Each group's newest matches, unranked (see ``SearchQuery.group_limit``); a
        group with more matches also gives its oldest ones and, first, the newest of
        its own-text matches, as on SQLite (see :mod:`~mnesis.store.postgres.newest`)."""

        async def _search(conn: Conn) -> list[SearchHit]:
            # A pipeline: BEGIN and the setting travel with the first query, COMMIT
            # with nothing to wait for (two round trips fewer).
            async with conn.pipeline(), conn.transaction():
                # The planner underrates building ``search_tsv || context_tsv`` for
                # every row of a scan: the GIN index over it is the cheaper plan.
                await conn.execute("SET LOCAL enable_seqscan = off")
                # A common word's estimate over a million rows passes ``jit_above_cost``:
                # compiling took 150-300 ms of server CPU for statements that stop
                # after a few hundred rows (tens of ms).
                await conn.execute("SET LOCAL jit = off")
                if query.relevance:
                    keys = await relevance_keys(
                        conn, query, where, limit + offset, self.term_counts, self.search_windows
                    )
                else:
                    keys = await newest_group_keys(
                        conn, query, scope, where, limit + offset, self.search_windows
                    )
                return await _rows(conn, keys)

        async def _rows(conn: Conn, keys: list[int]) -> list[SearchHit]:
            if scope == "messages":
                sql = (
                    "SELECT p.key, p.id, p.message_id, p.session_id, p.text_content, "
                    "m.role::text, m.created_at, 0.0, p.tool_name, p.part_type::text "
                    "FROM unnest(%s::bigint[]) WITH ORDINALITY AS j(key, ord) "
                    "JOIN message_parts p ON p.key = j.key "
                    "JOIN messages m ON m.id = p.message_id ORDER BY j.ord LIMIT %s OFFSET %s"
                )
                kind: Literal["message", "summary"] = "message"
            else:
                sql = (
                    "SELECT s.key, NULL, s.id, s.session_id, s.content, NULL, s.created_at, "
                    "0.0, NULL, NULL FROM unnest(%s::bigint[]) WITH ORDINALITY AS j(key, ord) "
                    "JOIN summaries s ON s.key = j.key ORDER BY j.ord LIMIT %s OFFSET %s"
                )
                kind = "summary"
            rows = await fetch(conn, sql, [keys, limit, offset])
            if query.relevance:
                # Own-text matches: their context is the speaker/date line only.
                return hits_of(kind, rows, speaker_lines(rows))
            return hits_of(kind, rows, await _contexts(conn, rows))

        return await self.db.read(_search)

    async def _scan(
        self, scope: TextScope, where: SearchFilter, before_key: int | None, limit: int
    ) -> list[SearchHit]:
        params: list[Any] = []
        alias = "p" if scope == "messages" else "s"
        key = ""
        if before_key is not None:
            key = f" AND {alias}.key < %s"
            params.append(before_key)
        clauses, args = filter_sql(where, scope)
        if scope == "messages":
            cte = ""
            if where.under_summary is not None:
                cte = DOWN_CTE
                params.insert(0, where.under_summary)
            sql = (
                f"{cte} SELECT p.key, p.id, p.message_id, p.session_id, p.text_content, "
                "m.role::text, m.created_at, p.tool_name FROM message_parts p "
                "JOIN messages m ON m.id = p.message_id "
                f"WHERE p.text_content IS NOT NULL AND NOT m.is_summary{key} {clauses} "
                "ORDER BY p.key DESC LIMIT %s"
            )
        else:
            sql = (
                "SELECT s.key, NULL, s.id, s.session_id, s.content, NULL, s.created_at, NULL "
                f"FROM summaries s WHERE true{key} {clauses} ORDER BY s.key DESC LIMIT %s"
            )
        params += [*args, limit]
        kind: Literal["message", "summary"] = "message" if scope == "messages" else "summary"

        async def _scan(conn: Conn) -> list[SearchHit]:
            return [
                SearchHit(kind, r[2], r[3], r[4] or "", r[6], r[1], r[5], 0.0, r[0], r[7])
                for r in await fetch(conn, sql, params)
            ]

        return await self.db.read(_scan)

    async def replies_to(self, message_ids: Sequence[str]) -> dict[str, SearchHit]:
        if not message_ids:
            return {}
        sql = (
            "SELECT q.id, p.key, p.id, p.message_id, p.session_id, p.text_content, "
            "m.role::text, m.created_at, 0.0, p.tool_name, p.part_type::text "
            "FROM messages q JOIN messages m ON m.session_id = q.session_id AND m.seq = ("
            "  SELECT MIN(n.seq) FROM messages n "
            "  WHERE n.session_id = q.session_id AND n.seq > q.seq AND NOT n.is_summary) "
            "JOIN message_parts p ON p.message_id = m.id AND p.part_type = 'text' "
            "WHERE q.id = ANY(%s) ORDER BY p.ordinal DESC"
        )

        async def _replies(conn: Conn) -> dict[str, SearchHit]:
            rows = await fetch(conn, sql, [list(message_ids)])
            page = [r[1:] for r in rows]
            hits = hits_of("message", page, await _contexts(conn, page))
            return {r[0]: hit for r, hit in zip(rows, hits, strict=True)}

        return await self.db.read(_replies)


async def _contexts(conn: Conn, rows: Sequence[Sequence[Any]]) -> dict[Any, str | None]:
    """The neighbour context of each conversation part among a page's rows (see
    :func:`~mnesis.store.shared.hit_contexts.hits_of`), rebuilt with one statement."""
    hits = wanted(rows)
    if not hits:
        return {}
    return contexts_of(hits, await fetch(conn, PG_HIT_NEIGHBOURS, [keys_of(hits)]))
