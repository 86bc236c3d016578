"""A session's model token usage kept as running sums (``session_usage``, m015).

History is append-only, so the usage of a session's messages up to a ``seq`` does not
change when newer messages arrive: a session's row holds the sums of ``tokens_*`` over
its messages with ``seq <= upto_seq``. A read sums only the messages after ``upto_seq``
(a range of the ``(session_id, seq)`` index) and, on a writable store, stores the new
sums, so loading a long session costs the messages since the last read, not its whole
history. The one permitted change of a message's usage (``update_message_tokens``,
``append_parts`` with tokens) adjusts a row that already covers the message by the
difference, in the same transaction (:data:`ADJUST`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnesis.models.limits import INT64_MAX
from mnesis.models.tokens import TokenUsage
from mnesis.store.records import UsageCheck

__all__ = [
    "ADJUST",
    "FORGET",
    "KEPT_SELECT",
    "UPSERT",
    "Kept",
    "adjust_args",
    "kept_check",
    "kept_usage",
    "newer_select",
    "usage_check",
    "usage_of",
    "usage_read",
]

_COLUMNS = ("input", "output", "cache_read", "cache_write", "total")
_SUMS = ", ".join(f"sum_{c}" for c in _COLUMNS)

UPSERT = (
    f"INSERT INTO session_usage (session_id, upto_seq, {_SUMS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET upto_seq = excluded.upto_seq, "
    + ", ".join(f"sum_{c} = excluded.sum_{c}" for c in _COLUMNS)
)
"""Store a session's sums (args: session, upto_seq, the five sums)."""

ADJUST = (
    "UPDATE session_usage SET "
    + ", ".join(
        f"sum_{c} = sum_{c} + ? - (SELECT tokens_{c} FROM messages WHERE id = ?)" for c in _COLUMNS
    )
    + " WHERE session_id = (SELECT session_id FROM messages WHERE id = ?) "
    "AND upto_seq >= (SELECT seq FROM messages WHERE id = ?)"
)
"""Move a session's kept sums by a message's change of usage, when they cover it: run
before the message's ``UPDATE`` (args: :func:`adjust_args`)."""


def adjust_args(message_id: str, tokens: TokenUsage) -> tuple[Any, ...]:
    """The arguments of :data:`ADJUST` for ``message_id``'s new ``tokens``."""
    new = (
        tokens.input,
        tokens.output,
        tokens.cache_read,
        tokens.cache_write,
        tokens.effective_total(),
    )
    pairs = [v for value in new for v in (value, message_id)]
    return (*pairs, message_id, message_id)


def usage_read(sum_fn: str) -> str:
    """One statement (one snapshot) reading a session's kept row and the sums of its
    newer messages with ``sum_fn`` (args: the session three times): ``upto_seq``, the
    five kept sums, the newest ``seq`` after ``upto_seq`` (NULL: none), the five newer
    sums."""
    newer = ", ".join(f"{sum_fn}(tokens_{c})" for c in _COLUMNS)
    return (
        f"SELECT u.upto_seq, {', '.join(f'u.sum_{c}' for c in _COLUMNS)}, n.* FROM "
        f"(SELECT MAX(seq), {newer} FROM messages WHERE session_id = ? AND seq > "
        "COALESCE((SELECT upto_seq FROM session_usage WHERE session_id = ?), 0)) n "
        "LEFT JOIN session_usage u ON u.session_id = ?"
    )


KEPT_SELECT = (
    f"SELECT upto_seq, {', '.join(f'sum_{c}' for c in _COLUMNS)} FROM session_usage "
    "WHERE session_id = ?"
)
"""A session's kept row (args: the session): ``upto_seq`` and the five sums."""


def newer_select(sum_fn: str) -> str:
    """The newest ``seq`` and the five sums (``sum_fn``) of the session's messages after
    a ``seq`` (args: the session, the ``seq``): the second half of a :func:`usage_read`
    row, for an engine whose planner needs the bound as a value to read an index range."""
    return (
        f"SELECT MAX(seq), {', '.join(f'{sum_fn}(tokens_{c})' for c in _COLUMNS)} "
        "FROM messages WHERE session_id = ? AND seq > ?"
    )


Kept = tuple[int | None, list[int]]
"""``(upto_seq, sums)``: the row to store (None: nothing newer to store) and the five
sums of the whole session."""


def kept_usage(row: Sequence[Any]) -> Kept:
    """The sums of the session from a :func:`usage_read` row, and the ``upto_seq`` of
    the row to store when newer messages were summed."""
    kept = [int(v or 0) for v in row[1:6]]
    newer = [int(v or 0) for v in row[7:12]]
    sums = [min(a + b, INT64_MAX) for a, b in zip(kept, newer, strict=True)]
    return (None if row[6] is None else int(row[6])), sums


def usage_of(sums: Sequence[int]) -> TokenUsage:
    """A :class:`TokenUsage` of the five sums."""
    input_, output, cache_read, cache_write, total = sums
    return TokenUsage(
        input=input_, output=output, cache_read=cache_read, cache_write=cache_write, total=total
    )


def kept_check(sum_fn: str) -> str:
    """One statement (one snapshot) reading a session's kept row beside a fresh sum
    (``sum_fn``) of its messages up to the same ``seq`` (args: the session): ``upto_seq``,
    the five kept sums, the five fresh sums; no row when nothing is kept."""
    kept = ", ".join(f"u.sum_{c}" for c in _COLUMNS)
    fresh = ", ".join(f"{sum_fn}(m.tokens_{c})" for c in _COLUMNS)
    return (
        f"SELECT u.upto_seq, {kept}, {fresh} FROM session_usage u "
        "LEFT JOIN messages m ON m.session_id = u.session_id AND m.seq <= u.upto_seq "
        f"WHERE u.session_id = ? GROUP BY u.upto_seq, {kept}"
    )


def usage_check(row: Sequence[Any]) -> UsageCheck:
    """The :class:`UsageCheck` of a :func:`kept_check` row (fresh sums capped as a
    read caps them)."""
    fresh = tuple(min(int(v or 0), INT64_MAX) for v in row[6:11])
    return UsageCheck(int(row[0]), tuple(int(v) for v in row[1:6]), fresh)


FORGET = "DELETE FROM session_usage WHERE session_id = ?"
"""Drop a session's kept sums (args: the session): the next read sums its whole history."""
