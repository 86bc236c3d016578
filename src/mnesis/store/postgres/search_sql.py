"""SQL fragments of PostgreSQL full-text search: ``tsquery`` text, scope filters and
the match conditions of the candidate pool's groups."""

from __future__ import annotations

from typing import Any

from mnesis.store.base import SearchFilter
from mnesis.store.search_query import QuerySyntax, SearchQuery, Term, render_query
from mnesis.store.shared.search_filter import range_and_lineage
from mnesis.store.shared.sql import pg

__all__ = [
    "NOT_SUMMARY",
    "PART_TSV",
    "filter_sql",
    "group_condition",
    "own_text_condition",
    "render_tsquery",
    "render_weighted",
]

PART_TSV = "(p.search_tsv || p.context_tsv)"
"""A part's text and its neighbour context, as the GIN index holds them."""
_MATCH = "@@ to_tsquery('english', %s)"
NOT_SUMMARY = "p.message_id NOT IN (SELECT id FROM messages WHERE is_summary)"
"""A part is not a summary message's: one look at the summary messages' small index
(m013) per statement, not a read of each candidate's message."""


def filter_sql(where: SearchFilter, scope: str) -> tuple[str, list[Any]]:
    """Session, time-range and lineage clauses of a search (``AND ...``) and their
    parameters; the lineage clause needs ``DOWN_CTE``."""
    clauses: list[str] = []
    args: list[Any] = []
    alias = "p" if scope == "messages" else "s"
    if where.session_ids is not None:
        if len(where.session_ids) == 1:
            clauses.append(f"AND {alias}.session_id = %s")
            args.append(where.session_ids[0])
        else:
            clauses.append(f"AND {alias}.session_id = ANY(%s)")
            args.append(list(where.session_ids))
    bounds, bound_args = range_and_lineage(where, scope)
    clauses.extend(pg(clause) for clause in bounds)
    args.extend(bound_args)
    return " ".join(clauses), args


def group_condition(group: SearchQuery, scope: str, both: str = PART_TSV) -> tuple[str, list[str]]:
    """The ``WHERE`` condition of one group's matches and its parameters; ``both`` is
    the expression of a part's text and context vector (columns of ``p``/``s``)."""
    tsquery = render_tsquery(group)
    if scope == "summaries":
        return f"s.search_tsv {_MATCH}", [tsquery]
    if group.context_only:
        return f"{both} {_MATCH} AND p.context_tsv {_MATCH}", [tsquery, tsquery]
    if group.include_context:
        return f"{both} {_MATCH}", [tsquery]
    return f"{both} {_MATCH} AND p.search_tsv {_MATCH}", [tsquery, tsquery]


def own_text_condition(group: SearchQuery, both: str = PART_TSV) -> tuple[str, list[str]] | None:
    """The condition of a group's own-text matches (see ``SearchQuery.group_limit``)."""
    own = group.own_text_terms()[0]
    if not group.include_context or group.context_only or not own:
        return None
    everything = render_tsquery(SearchQuery(all_of=group.all_of))
    text = render_tsquery(SearchQuery(all_of=own))
    return f"{both} {_MATCH} AND p.search_tsv {_MATCH}", [everything, text]


def _quote(phrase: tuple[str, ...]) -> str:
    """A quoted ``tsquery`` phrase: PostgreSQL parses and stems its words and joins them
    with ``<->``; inside quotes no character is an operator."""
    text = " ".join(phrase).replace("\\", "\\\\").replace("'", "''")
    return f"'{text}'"


def _phrases(term: Term) -> tuple[tuple[str, ...], ...]:
    """A term's phrases and its pieces as typed: PostgreSQL's parser keeps a path, a
    host name or a URL as one lexeme, which the phrase of its words never matches."""
    return (*term.alternatives, term.typed) if term.typed else term.alternatives


def _tsquery_term(term: Term) -> str:
    quoted = [_quote(phrase) for phrase in _phrases(term)]
    return quoted[0] if len(quoted) == 1 else "(" + " | ".join(quoted) + ")"


_TSQUERY = QuerySyntax(" & ", " | ", " & !")


def render_tsquery(query: SearchQuery) -> str:
    """The ``to_tsquery('english', ...)`` text of a query; every phrase is quoted, so no
    word can form an operator."""
    return render_query(query, _tsquery_term, _TSQUERY)


def render_weighted(terms: tuple[Term, ...], weight: str) -> str:
    """Every one of ``terms`` as ``tsquery`` text matching only lexemes of ``weight``
    (``A``: conversation text, ``D``: tool input/output)."""

    def term(t: Term) -> str:
        quoted = [f"{_quote(phrase)}:{weight}" for phrase in _phrases(t)]
        return quoted[0] if len(quoted) == 1 else "(" + " | ".join(quoted) + ")"

    return render_query(SearchQuery(all_of=terms), term, _TSQUERY)
