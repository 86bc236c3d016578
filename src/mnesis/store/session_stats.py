"""Per-session counts computed in the database (``mnesis sessions`` / ``mnesis stats``).

:class:`SessionStats` is what :meth:`~mnesis.store.base.StoreBackend.session_stats`
returns. The statements here are written once for both backends (``?`` placeholders;
``{where}`` is each backend's spelling of "``session_id`` is one of a list", or empty for
every session); :func:`assemble` turns their grouped rows into records. No message or
part row is read into Python: each statement is one aggregate grouped by session.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mnesis.models.limits import INT64_MAX
from mnesis.store.shared.statements import DB, StorePart

__all__ = ["STATEMENTS", "BaseStats", "SessionStats", "assemble", "queries"]


@dataclass(slots=True)
class SessionStats:
    """What one session holds (every count 0 for a session without messages)."""

    session_id: str
    messages: int = 0
    """Conversation messages (compaction markers not counted)."""
    compactions: int = 0
    """Compaction marker messages."""
    turns: int = 0
    """User messages (compaction markers not counted)."""
    parts: int = 0
    """Message parts, of every kind (those of compaction markers too)."""
    tool_calls: int = 0
    """Tool parts (one per tool call)."""
    pruned_tool_outputs: int = 0
    """Tool parts whose output was tombstoned."""
    message_tokens: int = 0
    """Sum of the token estimates of the conversation messages."""
    context_tokens: int = 0
    """Sum of the tokens of the session's context items."""
    model_tokens: int = 0
    """Sum of the token usage the model reported (``tokens_total``)."""
    last_message_at: int | None = None
    """``created_at`` of the message with the highest ``seq``."""
    summaries_by_kind: dict[str, int] = field(default_factory=dict)
    summaries_by_level: dict[int, int] = field(default_factory=dict)
    summaries_by_depth: dict[int, int] = field(default_factory=dict)

    @property
    def summaries(self) -> int:
        """Summaries of the session, of every kind."""
        return sum(self.summaries_by_kind.values())


STATEMENTS = {
    "messages": (
        "SELECT m.session_id, "
        "SUM(CASE WHEN m.is_summary THEN 0 ELSE 1 END), "
        "SUM(CASE WHEN m.is_summary THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN m.is_summary THEN 0 WHEN m.role = 'user' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN m.is_summary THEN 0 ELSE m.token_estimate END), "
        "SUM(CAST(m.tokens_total AS DOUBLE PRECISION)), "
        "(SELECT l.created_at FROM messages l WHERE l.session_id = m.session_id "
        "ORDER BY l.seq DESC LIMIT 1) "
        "FROM messages m {where} GROUP BY m.session_id"
    ),
    "parts": (
        "SELECT m.session_id, COUNT(*), "
        "SUM(CASE WHEN m.part_type = 'tool' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN m.part_type = 'tool' AND m.compacted_at IS NOT NULL THEN 1 ELSE 0 END) "
        "FROM message_parts m {where} GROUP BY m.session_id"
    ),
    "context": (
        "SELECT m.session_id, SUM(m.tokens) FROM context_items m {where} GROUP BY m.session_id"
    ),
    "summaries": (
        "SELECT m.session_id, CAST(m.kind AS TEXT), m.level, m.depth, COUNT(*) "
        "FROM summaries m {where} GROUP BY m.session_id, m.kind, m.level, m.depth"
    ),
}
"""Name → grouped aggregate over one table aliased ``m``; ``{where}`` restricts
``m.session_id``."""


def queries(session_filter: tuple[str, Any] | None) -> list[tuple[str, str, tuple[Any, ...]]]:
    """``(name, sql, args)`` of each of :data:`STATEMENTS`, restricted by
    ``session_filter`` (the backend's clause on ``m.session_id`` and its argument) or over
    every session (None)."""
    if session_filter is None:
        return [(name, sql.format(where=""), ()) for name, sql in STATEMENTS.items()]
    clause, arg = session_filter
    return [(name, sql.format(where=f"WHERE {clause}"), (arg,)) for name, sql in STATEMENTS.items()]


def _count(value: Any) -> int:
    return min(int(value or 0), INT64_MAX)


def assemble(
    session_ids: Iterable[str], rows: Mapping[str, Sequence[Sequence[Any]]]
) -> dict[str, SessionStats]:
    """The stats of each of ``session_ids`` from the rows of each of :data:`STATEMENTS`."""
    out = {sid: SessionStats(sid) for sid in session_ids}
    for sid, messages, compactions, turns, tokens, model, last in rows["messages"]:
        stats = out.get(sid)
        if stats is not None:
            stats.messages, stats.compactions = _count(messages), _count(compactions)
            stats.turns, stats.message_tokens = _count(turns), _count(tokens)
            stats.model_tokens, stats.last_message_at = _count(model), last
    for sid, parts, tools, pruned in rows["parts"]:
        stats = out.get(sid)
        if stats is not None:
            stats.parts, stats.tool_calls = _count(parts), _count(tools)
            stats.pruned_tool_outputs = _count(pruned)
    for sid, tokens in rows["context"]:
        if sid in out:
            out[sid].context_tokens = _count(tokens)
    for sid, kind, level, depth, count in rows["summaries"]:
        stats = out.get(sid)
        if stats is not None:
            n = int(count)
            by_kind, by_level, by_depth = (
                stats.summaries_by_kind,
                stats.summaries_by_level,
                stats.summaries_by_depth,
            )
            by_kind[str(kind)] = by_kind.get(str(kind), 0) + n
            by_level[int(level)] = by_level.get(int(level), 0) + n
            by_depth[int(depth)] = by_depth.get(int(depth), 0) + n
    return out


class BaseStats(StorePart[DB]):
    """A backend's ``stats`` collaborator: each engine runs :data:`STATEMENTS` its way
    (``store/sqlite/stats.py``, ``store/postgres/stats.py``) and measures its data."""

    @abstractmethod
    async def session_stats(self, session_ids: Sequence[str] | None) -> dict[str, SessionStats]:
        """Counts of each session (of every session when ``session_ids`` is None),
        computed by aggregate queries; an unknown ID gets zero counts."""

    @abstractmethod
    async def used_bytes(self) -> int:
        """See :meth:`~mnesis.store.base_maintenance.MaintenanceBackend.used_bytes`."""
