"""Checking a session's hash chain (see :mod:`~mnesis.store.shared.chain`), the same on
both backends: the reads (:func:`chain_reads`) and the walk over their rows
(:func:`check_chain`).

Each link is checked against its stored predecessor: link ``n`` is intact when its
stored hash equals ``hash(stored hash of n - 1, digest of its row as stored now)``. The
first link where that fails is the first change (a row's content, a link's kind or
hash, a link removed or inserted); a chain rewritten as a whole passes this check and
is caught only by comparing its head with one recorded earlier (``mnesis verify
--expect``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mnesis.store.records import ChainBreak, ChainHead, ChainReport
from mnesis.store.shared.chain import (
    MESSAGE_FIELDS,
    PART_FIELDS,
    Link,
    digest,
    genesis,
    link_hash,
)
from mnesis.store.shared.sql import SUMMARY_COLUMNS

__all__ = ["ChainRows", "chain_reads", "check_chain", "session_links"]

# The columns a link covers that hold numbers; every other one is text, read as stored.
_NUMBERS = frozenset(
    "created_at seq is_summary ordinal depth level token_count source_message_count".split()
)

ChainRows = tuple[
    Sequence[Sequence[Any]],
    Sequence[Sequence[Any]],
    Sequence[Sequence[Any]],
    Sequence[Sequence[Any]],
    Sequence[Sequence[Any]],
    Sequence[Sequence[Any]],
]
"""The rows of each statement of :func:`chain_reads`, in order."""


def chain_reads(raw: Callable[[str], str]) -> list[str]:
    """The statements (one ``?``: the session ID) reading what a chain check needs:
    links, messages, parts, summaries, summary sources, summary parents. ``raw(column)``
    is how the backend reads a text column as stored (SQLite: its bytes, so text that
    is no longer UTF-8 is hashed, not a decode error)."""

    def cols(fields: Sequence[str]) -> str:
        return ", ".join(f if f in _NUMBERS else raw(f) for f in fields)

    # A summary link covers every column ``SUMMARY_INSERT`` writes but search_text, in
    # its order: SUMMARY_COLUMNS (pinned with the others by tests/store/test_chain_format.py).
    by_summary = "summary_id IN (SELECT id FROM summaries WHERE session_id = ?)"
    return [
        f"SELECT link, {raw('kind')}, {raw('row_id')}, hash, migrated FROM history_chain "
        "WHERE session_id = ? ORDER BY link",
        f"SELECT {cols(MESSAGE_FIELDS)} FROM messages WHERE session_id = ?",
        f"SELECT {cols(PART_FIELDS)} FROM message_parts WHERE session_id = ?",
        f"SELECT {cols(SUMMARY_COLUMNS)} FROM summaries WHERE session_id = ?",
        f"SELECT {raw('summary_id')}, {raw('message_id')}, ordinal FROM summary_messages "
        f"WHERE {by_summary}",
        f"SELECT {raw('summary_id')}, {raw('parent_summary_id')}, ordinal FROM summary_parents "
        f"WHERE {by_summary}",
    ]


def _text(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return bytes(value)


def _shown(value: Any) -> str:
    return _text(value).decode("utf-8", "replace")


def _lineage(rows: Sequence[Sequence[Any]]) -> dict[bytes, list[bytes]]:
    out: dict[bytes, list[tuple[int, bytes]]] = {}
    for summary_id, other, ordinal in rows:
        out.setdefault(_text(summary_id), []).append((int(ordinal), _text(other)))
    return {k: [o for _, o in sorted(v)] for k, v in out.items()}


def _file_ids(value: Any) -> Any:
    if isinstance(value, list):
        return value
    try:
        return json.loads(_text(value))
    except ValueError:
        return _text(value)


def _fields(kind: str, row: Sequence[Any], lineage: tuple[Any, Any]) -> tuple[Any, ...] | None:
    """The values a link of ``kind`` covers, from the row as read (None: kind unknown)."""
    if kind == "message":
        return (*row[:7], int(row[7]), *row[8:])
    if kind == "part":
        return tuple(row)
    if kind == "part_open":
        return tuple(row[:8])
    if kind == "result":
        return (row[0], row[8], row[9], row[10])
    if kind == "summary":
        sources, parents = lineage
        return (*row[:7], _file_ids(row[7]), *row[8:13], sources, parents)
    return None


def check_chain(session_id: str, rows: ChainRows, expect: bytes | None = None) -> ChainReport:
    """Walk a session's links (rows of :func:`chain_reads`); the first broken one, and
    the link whose stored hash is ``expect``."""
    links, messages, parts, summaries, sources, parents = rows
    tables: dict[str, dict[bytes, Sequence[Any]]] = {
        "message": {_text(r[0]): r for r in messages},
        "part": {_text(r[0]): r for r in parts},
        "summary": {_text(r[0]): r for r in summaries},
    }
    tables["part_open"] = tables["result"] = tables["part"]
    by_source, by_parent = _lineage(sources), _lineage(parents)
    last_seq = max((int(r[9]) for r in messages), default=0)
    head = ChainHead(
        session_id,
        len(links),
        bytes(links[-1][3]).hex() if links else "",
        last_seq,
        sum(1 for r in links if r[4]),
    )
    report = ChainReport(head)
    previous = genesis(session_id)
    covered: set[tuple[str, bytes]] = set()
    for expected, (number, kind_raw, row_raw, stored, _migrated) in enumerate(links, 1):
        if expect is not None and bytes(stored) == expect and report.expected_link is None:
            report.expected_link = expected
        kind, row_id = _shown(kind_raw), _text(row_raw)
        table = "part" if kind in ("part_open", "result") else kind
        covered.add((table, row_id))
        detail = _link_problem(expected, number, kind, row_id, tables, by_source, by_parent)
        if detail is None:
            row = tables[kind][row_id]
            lineage = (by_source.get(row_id, []), by_parent.get(row_id, []))
            fields = _fields(kind, row, lineage)
            assert fields is not None
            if link_hash(previous, digest(kind, fields)) != bytes(stored):
                detail = _changed(kind, row)
        if detail is not None:
            report.broken = ChainBreak(int(number), kind, _shown(row_raw), detail)
            break
        previous = bytes(stored)
    if report.broken is None:
        report.unchained = [
            _shown(key)
            for table in ("message", "part", "summary")
            for key in tables[table]
            if (table, key) not in covered
        ]
    return report


def _link_problem(
    expected: int,
    number: Any,
    kind: str,
    row_id: bytes,
    tables: dict[str, dict[bytes, Sequence[Any]]],
    by_source: dict[bytes, list[bytes]],
    by_parent: dict[bytes, list[bytes]],
) -> str | None:
    if int(number) != expected:
        return f"link {expected} is missing (the next stored link is {number})"
    if kind not in tables:
        return f"the link's kind {kind!r} is not one mnesis writes"
    if row_id not in tables[kind]:
        return f"the {kind.replace('_open', '')} row it covers is missing"
    return None


def _changed(kind: str, row: Sequence[Any]) -> str:
    where = f" (message seq {row[9]})" if kind == "message" else ""
    covered = {
        "message": "role, IDs, agent, model, seq or time",
        "part": "type, text, content, tool fields or position",
        "part_open": "type, tool name/call ID, message or position",
        "result": "tool result (content, text, state)",
        "summary": "content, level, span, file IDs or lineage",
    }[kind]
    return (
        f"the {kind} row{where} differs from what was hashed when it was written "
        f"(its {covered} changed, or the link's stored hash did)"
    )


def session_links(session_id: str, rows: ChainRows) -> list[Link]:
    """The links of a session's stored rows (rows of :func:`chain_reads`, links
    ignored), as the m011 migration gives a chain to history written before it: each
    message (by ``seq``) followed by its parts (by ordinal), then the summaries (by
    creation time). A tool part still pending or running gets a ``part_open`` link."""
    _links, messages, parts, summaries, sources, parents = rows
    by_message: dict[bytes, list[Sequence[Any]]] = {}
    for part in sorted(parts, key=lambda r: int(r[3])):
        by_message.setdefault(_text(part[1]), []).append(part)
    by_source, by_parent = _lineage(sources), _lineage(parents)
    out: list[Link] = []
    for m in sorted(messages, key=lambda r: int(r[9])):
        out.append(_link(session_id, "message", m, ([], [])))
        for part in by_message.get(_text(m[0]), []):
            open_call = (
                _text(part[4]) == b"tool"
                and part[10] is not None
                and _text(part[10]) in (b"pending", b"running")
            )
            out.append(_link(session_id, "part_open" if open_call else "part", part, ([], [])))
    for summary in sorted(summaries, key=lambda r: (int(r[12]), _text(r[0]))):
        key = _text(summary[0])
        lineage = (by_source.get(key, []), by_parent.get(key, []))
        out.append(_link(session_id, "summary", summary, lineage))
    return out


def _link(session_id: str, kind: str, row: Sequence[Any], lineage: tuple[Any, Any]) -> Link:
    fields = _fields(kind, row, lineage)
    assert fields is not None
    return (session_id, kind, _shown(row[0]), digest(kind, fields))
