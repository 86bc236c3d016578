"""The neighbour context of search hits, rebuilt at query time (both backends).

The context a part was indexed with (see :mod:`~mnesis.store.shared.search_context`) is
not stored: a search rebuilds it for the few hits of its page with one statement,
:data:`SQLITE_HIT_NEIGHBOURS` or :data:`PG_HIT_NEIGHBOURS`, which reads at most two
neighbours of each hit, each cut to the characters the context keeps. The neighbours
are those the writer saw: the text parts of the same session's non-summary messages
at most ``WINDOW`` ``seq`` back, written before the hit (a lower row key).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from mnesis.store.records import SearchHit
from mnesis.store.shared.search_context import WINDOW, search_context

__all__ = [
    "PG_HIT_NEIGHBOURS",
    "PG_PART_NEIGHBOURS",
    "SQLITE_HIT_NEIGHBOURS",
    "SQLITE_PART_NEIGHBOURS",
    "HitMeta",
    "contexts_of",
    "hits_of",
    "keys_of",
    "needs_context",
    "wanted",
]

_CUT = 600
"""Characters of a neighbour's text the context keeps (as ``search_context``)."""

_NEIGHBOURS = """
SELECT hit, role, text FROM (
    SELECT {hit} AS hit, CAST(nm.role AS TEXT) AS role,
        substr(np.text_content, 1, {cut}) AS text,
        row_number() OVER (PARTITION BY p.{key} ORDER BY nm.seq DESC, np.ordinal) AS n
    FROM {hits}
    JOIN message_parts p ON {hit} = j.value
    JOIN messages m ON m.id = p.message_id
    JOIN messages nm ON nm.session_id = m.session_id
        AND nm.seq < m.seq AND nm.seq >= m.seq - {window}
    JOIN message_parts np ON np.message_id = nm.id
    WHERE NOT nm.is_summary AND np.part_type = 'text' AND np.text_content IS NOT NULL
        AND np.{key} < p.{key}
) AS found WHERE n <= 2 ORDER BY hit, n
"""


def _neighbours(key: str, hits: str, by_id: bool) -> str:
    hit = "p.id" if by_id else f"p.{key}"
    return _NEIGHBOURS.format(key=key, hit=hit, hits=hits, cut=_CUT, window=WINDOW)


SQLITE_HIT_NEIGHBOURS = _neighbours("rowid", "json_each(?) j", by_id=False)
"""The first two neighbours of each hit, ``(row key, role, text)`` in order (args: the
hits' row keys as a JSON array)."""

_PG_NEIGHBOURS = """
SELECT hit, role, text FROM (
    SELECT {hit} AS hit, CAST(nm.role AS TEXT) AS role,
        substr(np.text_content, 1, {cut}) AS text,
        row_number() OVER (PARTITION BY p.key ORDER BY nm.seq DESC, np.ordinal) AS n
    FROM {hits}
    JOIN message_parts p ON {hit} = j.value
    JOIN messages m ON m.id = p.message_id
    CROSS JOIN LATERAL (
        SELECT nm.id, nm.role, nm.seq FROM messages nm
        WHERE nm.session_id = m.session_id AND nm.seq < m.seq AND nm.seq >= m.seq - {window}
            AND NOT nm.is_summary OFFSET 0
    ) nm
    CROSS JOIN LATERAL (
        SELECT np.key, np.ordinal, np.text_content FROM message_parts np
        WHERE np.message_id = nm.id AND np.part_type = 'text'
            AND np.text_content IS NOT NULL OFFSET 0
    ) np
    WHERE np.key < p.key
) AS found WHERE n <= 2 ORDER BY hit, n
"""
# PostgreSQL's planner would walk the parts' key index back from each hit (every
# earlier part of the table) for ``np.key < p.key``: each hit's few neighbour
# messages, then their parts, are looked up by index instead ("OFFSET 0" keeps the
# subqueries from being flattened into that plan).


def _pg_neighbours(hits: str, by_id: bool) -> str:
    hit = "p.id" if by_id else "p.key"
    return _PG_NEIGHBOURS.format(hit=hit, hits=hits, cut=_CUT, window=WINDOW)


PG_HIT_NEIGHBOURS = _pg_neighbours("unnest(%s::bigint[]) AS j(value)", by_id=False)
"""As :data:`SQLITE_HIT_NEIGHBOURS` on PostgreSQL (args: the hits' keys as an array)."""

SQLITE_PART_NEIGHBOURS = _neighbours("rowid", "json_each(?) j", by_id=True)
"""The first two neighbours of each part, ``(part ID, role, text)`` in order (args: the
part IDs as a JSON array)."""

PG_PART_NEIGHBOURS = _pg_neighbours(
    "jsonb_array_elements_text(CAST(? AS jsonb)) AS j(value)", by_id=True
)
"""As :data:`SQLITE_PART_NEIGHBOURS` on PostgreSQL, with ``?`` placeholders (see
:meth:`~mnesis.store.shared.statements.Statements.rows`)."""

HitMeta = tuple[Any, str, int]
"""``(row key or part ID, role, created_at)`` of a hit whose context is wanted."""


def needs_context(part_type: str | None, text: str | None) -> bool:
    """Whether a part was indexed with a context (conversation parts with text)."""
    return part_type is not None and part_type != "tool" and text is not None


def keys_of(hits: Sequence[HitMeta]) -> list[Any]:
    """The arguments of a neighbours statement: each hit's key once (a reply can be the
    hit of several questions)."""
    return list(dict.fromkeys(h[0] for h in hits))


def contexts_of(
    hits: Sequence[HitMeta], neighbours: Iterable[Sequence[Any]]
) -> dict[Any, str | None]:
    """Each hit's context (row key or part ID → context) from the rows of a neighbours
    statement."""
    previous: dict[Any, list[tuple[str, str]]] = {}
    for key, role, text in neighbours:
        previous.setdefault(key, []).append((str(role), str(text)))
    return {
        key: search_context(role, created_at, previous.get(key, []))
        for key, role, created_at in hits
    }


def wanted(rows: Sequence[Sequence[Any]]) -> list[HitMeta]:
    """The hits among a page's rows (see :func:`hits_of`) whose context is rebuilt: the
    conversation parts with text."""
    return [(r[0], str(r[5]), int(r[6])) for r in rows if needs_context(r[9], r[4])]


def hits_of(
    kind: Literal["message", "summary"],
    rows: Sequence[Sequence[Any]],
    contexts: dict[Any, str | None],
) -> list[SearchHit]:
    """A search page's rows as hits, with each hit's rebuilt context. A row is ``(row
    key, part ID, message or summary ID, session ID, text, role, created_at, rank, tool
    name, part type)`` (NULL where a summary has none), as every search statement of
    both backends selects it."""
    return [
        SearchHit(
            kind,
            r[2],
            r[3],
            r[4] or "",
            r[6],
            r[1],
            r[5],
            float(r[7]),
            r[0],
            r[8],
            contexts.get(r[0]),
        )
        for r in rows
    ]
