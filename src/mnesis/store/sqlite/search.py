"""Full-text search (FTS5, BM25) and newest-first scans of SQLite-stored history
(``SQLiteStore.search``; its statements in :mod:`mnesis.store.sqlite.search_sql`)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from typing import Any, Literal

from mnesis.store.base import SearchFilter, SearchHit
from mnesis.store.codec import dumps
from mnesis.store.search_query import (
    TERM_COUNT_CAP,
    SearchQuery,
    Term,
)
from mnesis.store.search_text import speaker_lines
from mnesis.store.shared.hit_contexts import (
    SQLITE_HIT_NEIGHBOURS,
    contexts_of,
    hits_of,
    keys_of,
    wanted,
)
from mnesis.store.shared.search import BaseSearch, TextScope
from mnesis.store.shared.sql import DOWN_CTE
from mnesis.store.sqlite.database import SQLiteDatabase
from mnesis.store.sqlite.search_levels import (
    NEAR_TOKENS,
    Group,
    RelevanceGroup,
    absent,
    capped_counts,
    newest_of_groups,
    relevance_keys,
)
from mnesis.store.sqlite.search_sql import (
    _filter_sql,
    _fts5_term,
    _keys_sql,
    _own_text_match,
    _ranked,
    _rows_searched,
    _sessions_are_a_small_share,
    _sessions_hold_everything,
    render_fts5,
)

__all__ = ["SQLiteSearch", "render_fts5"]


class SQLiteSearch(BaseSearch[SQLiteDatabase]):
    """Ranked search and scans over messages and summaries (``SQLiteStore.search``)."""

    async def _search(
        self, query: SearchQuery, scope: TextScope, where: SearchFilter, limit: int, offset: int
    ) -> list[SearchHit]:
        column = "search_text"
        if scope == "messages":
            # With the context, every column but the session ID's: no column filter
            # at all, which spares the index reading positions to check columns (the
            # session column holds one token, the session ID without its prefix).
            column = (
                "context"
                if query.context_only
                else ""
                if query.include_context
                else "{text_content tool_content}"
            )
        kind: Literal["message", "summary"] = "message" if scope == "messages" else "summary"
        # Rank inside the index first and join only the best candidates; a filter that
        # rejects too many of them falls back to joining every match (below).
        candidates = (limit + offset) * 4 + 64

        def _read(conn: sqlite3.Connection) -> list[SearchHit]:
            def match_of(q: SearchQuery) -> str:
                return f"{column} : ({render_fts5(q)})" if column else render_fts5(q)

            clauses, args = _filter_sql(where, scope)
            sessions = ""
            if where.session_ids is not None and not _sessions_hold_everything(
                conn, scope, where.session_ids
            ):
                tokens = " OR ".join(
                    '"' + sid[5:].replace('"', '""') + '"' for sid in where.session_ids
                )
                if (
                    query.newest_first
                    or query.relevance
                    or _sessions_are_a_small_share(conn, where.session_ids)
                ):
                    # Intersect posting lists: cheap when the sessions are a small part
                    # of the index, or when the index stops at the first matches.
                    sessions = f"session_id : ({tokens}) AND "
                else:
                    # Intersecting with a posting list that covers most of the index
                    # costs more than filtering the joined rows.
                    alias = "p" if scope == "messages" else "s"
                    clauses += f" AND {alias}.session_id IN (SELECT value FROM json_each(?))"
                    args = [*args, dumps(list(where.session_ids))]
            ranked = functools.partial(
                _ranked,
                conn,
                scope,
                f"{sessions}({match_of(query)})",
                clauses,
                args,
                where,
                limit,
                offset,
            )
            relevance = query.relevance and scope == "messages"
            if query.newest_first or relevance:
                head = [where.under_summary] if where.under_summary and scope == "messages" else []
                fts = "message_parts_fts" if scope == "messages" else "summaries_fts"
                if relevance:
                    keys = relevance_keys(
                        conn,
                        fts,
                        _relevance_groups(conn, query, sessions, where),
                        query.group_limit or limit + offset,
                        limit + offset,
                        sessions,
                    )
                else:
                    missing = _absent_terms(conn, fts, query.any_of)
                    # Rendered level by level: the walk often stops after the first few.
                    levels = (
                        [
                            Group(
                                f"{sessions}({match_of(q)})",
                                _own_text_match(q, sessions) if scope == "messages" else None,
                                frozenset(q.all_of),
                            )
                            for q in level.per_group()
                            if not missing.intersection(q.all_of)
                        ]
                        for level in query.levels()
                    )
                    keys = newest_of_groups(
                        conn, fts, levels, query.group_limit or limit + offset, limit + offset
                    )
                filtered = where.since is not None or where.until is not None or head
                sql = _keys_sql(scope, clauses, bool(head))
                # Without filters nearly every key passes: join the page's first.
                page = keys if filtered else keys[: limit + offset]
                rows = conn.execute(sql, [*head, dumps(page), *args, limit, offset]).fetchall()
                if len(rows) < limit and len(page) < len(keys):
                    rows = conn.execute(sql, [*head, dumps(keys), *args, limit, offset]).fetchall()
                if filtered and len(rows) < limit and not relevance:
                    # The filters come after the index here: rank every match instead
                    # (a relevance search keeps its bound: what passes is the pool).
                    rows = ranked(-1)
            else:
                rows = ranked(candidates)
            # A relevance search finds own-text matches: their context is the speaker
            # and date line only (no neighbours to read).
            contexts = (
                speaker_lines(rows)
                if relevance
                else _contexts(conn, rows)
                if scope == "messages"
                else {}
            )
            return hits_of(kind, rows, contexts)

        return await self.db.read(_read)

    async def _scan(
        self, scope: TextScope, where: SearchFilter, before_key: int | None, limit: int
    ) -> list[SearchHit]:
        clauses, args = _filter_sql(where, scope)
        sessions = ""
        if where.session_ids is not None:
            alias = "p" if scope == "messages" else "s"
            if len(where.session_ids) == 1:
                # Equality lets SQLite walk the (session_id, rowid) index in order.
                sessions = f" AND {alias}.session_id = ?"
                args = [where.session_ids[0], *args]
            else:
                sessions = f" AND {alias}.session_id IN (SELECT value FROM json_each(?))"
                args = [dumps(list(where.session_ids)), *args]
        if scope == "messages":
            key = " AND p.rowid < ?" if before_key is not None else ""
            sql = (
                f"{DOWN_CTE if where.under_summary else ''} "
                "SELECT p.rowid, p.id, p.message_id, p.session_id, p.text_content, m.role, "
                "m.created_at, p.tool_name FROM message_parts p "
                "JOIN messages m ON m.id = p.message_id "
                f"WHERE p.text_content IS NOT NULL AND m.is_summary = 0{sessions}{key} {clauses} "
                "ORDER BY p.rowid DESC LIMIT ?"
            )
        else:
            key = " AND s.rowid < ?" if before_key is not None else ""
            sql = (
                "SELECT s.rowid, NULL, s.id, s.session_id, s.content, NULL, s.created_at, NULL "
                f"FROM summaries s WHERE 1 = 1{sessions}{key} {clauses} "
                "ORDER BY s.rowid DESC LIMIT ?"
            )
        params: list[Any] = []
        if where.under_summary and scope == "messages":
            params.append(where.under_summary)
        params += args[:1] if sessions else []
        if before_key is not None:
            params.append(before_key)
        params += args[1:] if sessions else args
        params.append(limit)
        kind: Literal["message", "summary"] = "message" if scope == "messages" else "summary"

        def _scan(conn: sqlite3.Connection) -> list[SearchHit]:
            return [
                SearchHit(kind, r[2], r[3], r[4] or "", r[6], r[1], r[5], 0.0, r[0], r[7])
                for r in conn.execute(sql, params)
            ]

        return await self.db.read(_scan)

    async def replies_to(self, message_ids: Sequence[str]) -> dict[str, SearchHit]:
        if not message_ids:
            return {}
        sql = (
            "SELECT q.id, p.rowid, p.id, p.message_id, p.session_id, p.text_content, m.role, "
            "m.created_at, 0.0, p.tool_name, p.part_type "
            "FROM messages q JOIN messages m ON m.session_id = q.session_id AND m.seq = ("
            "  SELECT MIN(n.seq) FROM messages n "
            "  WHERE n.session_id = q.session_id AND n.seq > q.seq AND n.is_summary = 0) "
            "JOIN message_parts p ON p.message_id = m.id AND p.part_type = 'text' "
            "WHERE q.id IN (SELECT value FROM json_each(?)) ORDER BY p.ordinal DESC"
        )

        def _replies(conn: sqlite3.Connection) -> dict[str, SearchHit]:
            rows = conn.execute(sql, (dumps(list(message_ids)),)).fetchall()
            page = [r[1:] for r in rows]
            hits = hits_of("message", page, _contexts(conn, page))
            return {r[0]: hit for r, hit in zip(rows, hits, strict=True)}

        return await self.db.read(_replies)


def _contexts(conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> dict[Any, str | None]:
    """The neighbour context of each conversation part among a page's rows (see
    :func:`~mnesis.store.shared.hit_contexts.hits_of`), rebuilt with one statement."""
    hits = wanted(rows)
    if not hits:
        return {}
    return contexts_of(hits, conn.execute(SQLITE_HIT_NEIGHBOURS, (dumps(keys_of(hits)),)))


_OWN = "{text_content tool_content}"
_NEAR_ALTERNATIVES = 8
"""Most spellings (products of a combination's alternatives) written as ``NEAR`` groups."""


def _relevance_groups(
    conn: sqlite3.Connection, query: SearchQuery, sessions: str, where: SearchFilter
) -> list[RelevanceGroup]:
    """The combinations of a ``relevance`` query, best first (see
    ``SearchQuery.relevance_groups``): each one's matches in conversation text or tool
    input/output alike, then, when those are crowded, in conversation text, and its
    terms near each other in a tool input/output."""
    counts = capped_counts(
        conn,
        "message_parts_fts",
        [f"{sessions}({_OWN} : ({_fts5_term(t)}))" for t in query.any_of],
        TERM_COUNT_CAP,
    )
    out: list[RelevanceGroup] = []
    for group in query.relevance_groups(counts, _rows_searched(conn, where)):
        own, speaker_date = SearchQuery(all_of=(*query.all_of, *group)).own_text_terms()
        said = (
            f"context : ({render_fts5(SearchQuery(all_of=speaker_date))})" if speaker_date else ""
        )
        if not own:
            out.append(RelevanceGroup(None, (f"{sessions}({said})",)))
            continue
        terms = render_fts5(SearchQuery(all_of=own))
        text = f"text_content : ({terms})"
        parts = (
            f"{sessions}({text}{' AND ' + said if said else ''})",
            f"{sessions}(tool_content : ({_near(own)}))",
        )
        # With speaker/date terms only the text part asks for them: asked apart.
        either = None if said else f"{sessions}({_OWN} : ({terms}))"
        out.append(RelevanceGroup(either, parts, _words(own) if either else frozenset()))
    return out


def _words(terms: tuple[Term, ...]) -> frozenset[str]:
    """The terms as FTS5 expressions, if none is a phrase (see ``RelevanceGroup``)."""
    if any(len(phrase) > 1 for term in terms for phrase in term.alternatives):
        return frozenset()
    return frozenset(_fts5_term(term) for term in terms)


def _near(terms: tuple[Term, ...]) -> str:
    """``terms`` within ``NEAR_TOKENS`` of each other (every spelling), or all of them
    anywhere when there are too many spellings."""
    spellings: list[tuple[str, ...]] = [()]
    for term in terms:
        spellings = [(*s, " ".join(p)) for s in spellings for p in term.alternatives]
        if len(spellings) > _NEAR_ALTERNATIVES:
            return render_fts5(SearchQuery(all_of=terms))
    if len(terms) < 2:
        return render_fts5(SearchQuery(all_of=terms))
    groups = [
        "NEAR(" + " ".join('"' + w.replace('"', '""') + '"' for w in s) + f", {NEAR_TOKENS})"
        for s in spellings
    ]
    return " OR ".join(groups)


def _absent_terms(conn: sqlite3.Connection, table: str, terms: Sequence[Term]) -> set[Term]:
    """The terms no indexed row holds: a combination holding one matches nothing."""
    if len(terms) < 2:
        return set()
    return {terms[index] for index in absent(conn, table, [_fts5_term(t) for t in terms])}
