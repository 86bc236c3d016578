"""Full-text search (``tsquery``, ``ts_rank_cd``) and newest-first scans of history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.postgres.db import Conn
from mnesis.store.postgres.rows import DOWN_CTE, PostgresStoreBase, fetch
from mnesis.store.search_query import GroupMatches, SearchQuery, Term

__all__ = ["SearchMixin", "render_tsquery"]

RANK_WEIGHTS = "{0.35, 0.3, 0.4, 1.0}"
"""``ts_rank_cd`` weights of D, C, B, A: tool input/output (D) counts 0.35 of
conversation text and summaries (A), a part's neighbour context (C) 0.3, as the BM25
column weights on SQLite."""
_PART_TSV = "(p.search_tsv || p.context_tsv)"
"""A part's text and its neighbour context, as the GIN index holds them."""
_RANK = "-ts_rank_cd(%s::real[], {col}, to_tsquery('english', %s), 1)"
"""Lower is better (as SQLite's ``bm25``); normalisation 1 damps long documents."""


class SearchMixin(PostgresStoreBase):
    """Ranked search and scans over messages and summaries (part of ``PostgresStore``)."""

    async def search_text(
        self,
        *,
        query: SearchQuery,
        scope: Literal["messages", "summaries"],
        where: SearchFilter,
        limit: int,
        offset: int = 0,
    ) -> list[SearchHit]:
        if where.session_ids is not None and not where.session_ids:
            return []
        if query.newest_first:
            return await self._newest_of_groups(query, scope, where, limit, offset)
        tsquery = render_tsquery(query)
        params: list[Any] = []
        # Newest first and unranked: no ``ts_rank_cd`` (which reads every match's
        # vectors), and a top-N sort on the key.
        rank = "0.0::real" if query.newest_first else _RANK
        if not query.newest_first:
            params += [RANK_WEIGHTS, tsquery]
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
                own, ranked = "", _PART_TSV
            if own:
                params.append(tsquery)
            clauses, args = _filter_sql(where, scope)
            order = "p.key DESC" if query.newest_first else "rank, p.key"
            sql = (
                f"{cte} SELECT p.key, p.id, p.message_id, p.session_id, p.text_content, "
                f"m.role::text, m.created_at, {rank.format(col=ranked)} AS rank, "
                "p.tool_name, p.search_context "
                "FROM message_parts p JOIN messages m ON m.id = p.message_id "
                f"WHERE {_PART_TSV} @@ to_tsquery('english', %s) {own} AND NOT m.is_summary "
                f"{clauses} ORDER BY {order} LIMIT %s OFFSET %s"
            )
        else:
            params.append(tsquery)
            clauses, args = _filter_sql(where, scope)
            order = "s.key DESC" if query.newest_first else "rank, s.key"
            sql = (
                "SELECT s.key, NULL, s.id, s.session_id, s.content, NULL, s.created_at, "
                f"{rank.format(col='s.search_tsv')} AS rank, NULL, NULL FROM summaries s "
                "WHERE s.search_tsv @@ to_tsquery('english', %s) "
                f"{clauses} ORDER BY {order} LIMIT %s OFFSET %s"
            )
        params += [*args, limit, offset]
        kind: Literal["message", "summary"] = "message" if scope == "messages" else "summary"

        async def _search(conn: Conn) -> list[SearchHit]:
            return [
                SearchHit(
                    kind, r[2], r[3], r[4] or "", r[6], r[1], r[5], float(r[7]), r[0], r[8], r[9]
                )
                for r in await fetch(conn, sql, params)
            ]

        return await self.db.read(_search)

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
        its own-text matches, as on SQLite."""
        group_limit = query.group_limit or limit + offset
        clauses, args = _filter_sql(where, scope)
        head = [where.under_summary] if where.under_summary is not None else []
        cte = DOWN_CTE if head and scope == "messages" else ""
        if scope == "messages":
            matched = "FROM message_parts p JOIN messages m ON m.id = p.message_id WHERE "
            key, tail = "p.key", f"AND NOT m.is_summary {clauses}"
        else:
            matched, key, tail = "FROM summaries s WHERE ", "s.key", clauses

        def statement(condition: str, direction: str) -> str:
            # "+ 0": the key's index must not give the order, or the planner walks it
            # and tests every row's vector until enough match (all rows when few do)
            # instead of asking the GIN index which rows match.
            return (
                f"{cte} SELECT {key} {matched}{condition} {tail} "
                f"ORDER BY {key} + 0 {direction} LIMIT %s"
            )

        levels = [
            [
                (
                    _group_condition(g, scope),
                    _own_text_condition(g) if scope == "messages" else None,
                )
                for g in groups
            ]
            for groups in query.planned_groups()
        ]

        async def _search(conn: Conn) -> list[SearchHit]:
            async with conn.transaction():
                # The planner underrates building ``search_tsv || context_tsv`` for
                # every row of a scan: the GIN index over it is the cheaper plan.
                await conn.execute("SET LOCAL enable_seqscan = off")
                return await _groups(conn)

        async def _groups(conn: Conn) -> list[SearchHit]:
            async def keys_of(
                condition: tuple[str, list[str]], direction: str, n: int
            ) -> list[int]:
                sql = statement(condition[0], direction)
                return [r[0] for r in await fetch(conn, sql, [*head, *condition[1], *args, n])]

            found = GroupMatches()
            for groups in levels:
                for condition, own_text in groups:
                    newest = await keys_of(condition, "DESC", group_limit + 1)
                    own: list[int] = []
                    oldest: list[int] = []
                    if len(newest) > group_limit:
                        if own_text is not None:
                            own = await keys_of(own_text, "DESC", group_limit)
                        oldest = await keys_of(condition, "ASC", max(1, group_limit // 2))
                    found.add_group(newest[:group_limit], own, oldest)
                if found.end_level() >= limit + offset:
                    break
            if scope == "messages":
                sql = (
                    "SELECT p.key, p.id, p.message_id, p.session_id, p.text_content, "
                    "m.role::text, m.created_at, 0.0, p.tool_name, p.search_context "
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
            return [
                SearchHit(
                    kind, r[2], r[3], r[4] or "", r[6], r[1], r[5], float(r[7]), r[0], r[8], r[9]
                )
                for r in await fetch(conn, sql, [found.keys(), limit, offset])
            ]

        return await self.db.read(_search)

    async def scan_text(
        self,
        *,
        scope: Literal["messages", "summaries"],
        where: SearchFilter,
        before_key: int | None,
        limit: int,
    ) -> list[SearchHit]:
        if where.session_ids is not None and not where.session_ids:
            return []
        params: list[Any] = []
        alias = "p" if scope == "messages" else "s"
        key = ""
        if before_key is not None:
            key = f" AND {alias}.key < %s"
            params.append(before_key)
        clauses, args = _filter_sql(where, scope)
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
            "m.role::text, m.created_at, p.tool_name, p.search_context "
            "FROM messages q JOIN messages m ON m.session_id = q.session_id AND m.seq = ("
            "  SELECT MIN(n.seq) FROM messages n "
            "  WHERE n.session_id = q.session_id AND n.seq > q.seq AND NOT n.is_summary) "
            "JOIN message_parts p ON p.message_id = m.id AND p.part_type = 'text' "
            "WHERE q.id = ANY(%s) ORDER BY p.ordinal DESC"
        )

        async def _replies(conn: Conn) -> dict[str, SearchHit]:
            return {
                r[0]: SearchHit(
                    "message", r[3], r[4], r[5] or "", r[7], r[2], r[6], 0.0, r[1], r[8], r[9]
                )
                for r in await fetch(conn, sql, [list(message_ids)])
            }

        return await self.db.read(_replies)


def _filter_sql(where: SearchFilter, scope: str) -> tuple[str, list[Any]]:
    """Session, time-range and lineage clauses of a search."""
    clauses: list[str] = []
    args: list[Any] = []
    alias = "p" if scope == "messages" else "s"
    created = "m.created_at" if scope == "messages" else "s.created_at"
    if where.session_ids is not None:
        if len(where.session_ids) == 1:
            clauses.append(f"AND {alias}.session_id = %s")
            args.append(where.session_ids[0])
        else:
            clauses.append(f"AND {alias}.session_id = ANY(%s)")
            args.append(list(where.session_ids))
    if where.since is not None:
        clauses.append(f"AND {created} >= %s")
        args.append(where.since)
    if where.until is not None:
        clauses.append(f"AND {created} < %s")
        args.append(where.until)
    if where.under_summary is not None:
        if scope == "messages":
            clauses.append(
                "AND p.message_id IN (SELECT sm.message_id FROM summary_messages sm "
                "JOIN down ON sm.summary_id = down.id)"
            )
        else:
            clauses.append("AND false")
    return " ".join(clauses), args


def _group_condition(group: SearchQuery, scope: str) -> tuple[str, list[str]]:
    """The ``WHERE`` condition of one group's matches and its parameters."""
    tsquery = render_tsquery(group)
    match = "@@ to_tsquery('english', %s)"
    if scope == "summaries":
        return f"s.search_tsv {match}", [tsquery]
    if group.context_only:
        return f"{_PART_TSV} {match} AND p.context_tsv {match}", [tsquery, tsquery]
    if group.include_context:
        return f"{_PART_TSV} {match}", [tsquery]
    return f"{_PART_TSV} {match} AND p.search_tsv {match}", [tsquery, tsquery]


def _own_text_condition(group: SearchQuery) -> tuple[str, list[str]] | None:
    """The condition of a group's own-text matches (see ``SearchQuery.group_limit``)."""
    own = group.own_text_terms()[0]
    if not group.include_context or group.context_only or not own:
        return None
    everything = render_tsquery(SearchQuery(all_of=group.all_of))
    text = render_tsquery(SearchQuery(all_of=own))
    match = "@@ to_tsquery('english', %s)"
    return f"{_PART_TSV} {match} AND p.search_tsv {match}", [everything, text]


def _quote(phrase: tuple[str, ...]) -> str:
    """A quoted ``tsquery`` phrase: PostgreSQL parses and stems its words and joins them
    with ``<->``; inside quotes no character is an operator."""
    text = " ".join(phrase).replace("\\", "\\\\").replace("'", "''")
    return f"'{text}'"


def _tsquery_term(term: Term) -> str:
    quoted = [_quote(phrase) for phrase in term.alternatives]
    return quoted[0] if len(quoted) == 1 else "(" + " | ".join(quoted) + ")"


def render_tsquery(query: SearchQuery) -> str:
    """The ``to_tsquery('english', ...)`` text of a query; every phrase is quoted, so no
    word can form an operator."""
    parts = [_tsquery_term(t) for t in query.all_of]
    if query.any_of:
        groups = [" & ".join(_tsquery_term(t) for t in g) for g in query.any_groups()]
        if query.at_least > 1:
            groups = [f"({g})" for g in groups]
        parts.append("(" + " | ".join(groups) + ")")
    expression = " & ".join(parts)
    if query.not_all_of:
        excluded = " & ".join(_tsquery_term(t) for t in query.not_all_of)
        expression = f"({expression}) & !({excluded})"
    return expression
