"""A backend's ``grep_reads`` collaborator, engine-neutral (:class:`BaseGrepReads`): the
reads ``grep`` makes around its search, one statement each, written once for both
backends: where each hit stands in its session's context, and the newest turns of the
searched sessions (for the still-unanswered question).

A statement names its ID lists ``{ids}``: a table expression with one column ``value``
that each backend writes in its own dialect (:attr:`BaseGrepReads._ID_TABLE`) and fills
from one parameter (:meth:`BaseGrepReads._id_list`), in the order the lists appear.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mnesis.store.shared.statements import DB, StorePart

__all__ = ["BaseGrepReads", "ContextPlaces", "RecentTurn"]


@dataclass(frozen=True, slots=True)
class ContextPlaces:
    """Where messages and summaries stand in their own session's current context."""

    in_context: frozenset[str] = frozenset()
    """The message and summary IDs that are items of their session's context."""
    covering: dict[str, str] = field(default_factory=dict)
    """Message ID → the summary in its session's context that covers it (messages in
    the context raw, or covered by no context summary, are left out)."""


@dataclass(frozen=True, slots=True)
class RecentTurn:
    """One of the newest non-summary messages of a session, by what its parts are."""

    session_id: str
    message_id: str
    role: str
    has_text: bool
    """It holds a text part."""
    calls_tools: bool
    """It holds a tool part."""


_PLACES = (
    "WITH RECURSIVE up(mid, id) AS ("
    "SELECT sm.message_id, sm.summary_id FROM summary_messages sm "
    "WHERE sm.message_id IN (SELECT value FROM {ids}) "
    "UNION SELECT up.mid, sp.summary_id FROM summary_parents sp "
    "JOIN up ON sp.parent_summary_id = up.id) "
    "SELECT m.id, NULL, ci.position FROM messages m JOIN context_items ci "
    "ON ci.message_id = m.id AND ci.session_id = m.session_id "
    "WHERE m.id IN (SELECT value FROM {ids}) "
    "UNION ALL SELECT up.mid, ci.summary_id, ci.position FROM up "
    "JOIN messages m ON m.id = up.mid JOIN context_items ci ON ci.session_id = m.session_id "
    "AND ci.item_type = 'summary' AND ci.summary_id = up.id "
    "UNION ALL SELECT s.id, NULL, ci.position FROM summaries s JOIN context_items ci "
    "ON ci.session_id = s.session_id AND ci.item_type = 'summary' AND ci.summary_id = s.id "
    "WHERE s.id IN (SELECT value FROM {ids})"
)
"""Rows (ID, covering summary or NULL, context position): a message or summary in its
session's context (NULL), or a message's ancestor summary that is (the summary)."""

_RECENT = (
    "WITH tail(sid, top) AS (SELECT value, "
    "(SELECT MAX(x.seq) FROM messages x WHERE x.session_id = value) FROM {ids}) "
    "SELECT m.session_id, m.id, CAST(m.role AS TEXT), "
    "EXISTS (SELECT 1 FROM message_parts p WHERE p.message_id = m.id "
    "AND p.part_type = 'text'), "
    "EXISTS (SELECT 1 FROM message_parts p WHERE p.message_id = m.id "
    "AND p.part_type = 'tool') "
    "FROM tail JOIN messages m ON m.session_id = tail.sid AND m.seq > tail.top - ? "
    "WHERE m.is_summary = ? ORDER BY m.session_id, m.seq"
)
"""The non-summary messages among the newest ``count`` of each listed session."""


class BaseGrepReads(StorePart[DB]):
    """:meth:`context_places` and :meth:`recent_turns`."""

    _ID_TABLE: ClassVar[str]
    """The backend's table expression of one ID-list parameter, column ``value``."""

    @abstractmethod
    def _id_list(self, ids: Sequence[str]) -> Any:
        """The parameter value of an ID list."""

    @abstractmethod
    async def _read_rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Every row of one read statement (``?`` placeholders)."""

    async def context_places(
        self, message_ids: Sequence[str], summary_ids: Sequence[str]
    ) -> ContextPlaces:
        if not message_ids and not summary_ids:
            return ContextPlaces()
        messages = self._id_list(message_ids)
        rows = await self._read_rows(
            _PLACES.format(ids=self._ID_TABLE),
            (messages, messages, self._id_list(summary_ids)),
        )
        in_context = frozenset(r[0] for r in rows if r[1] is None)
        covering: dict[str, str] = {}
        for item_id, summary_id, _ in sorted((r for r in rows if r[1] is not None), key=_at):
            if item_id not in in_context:
                covering.setdefault(item_id, summary_id)
        return ContextPlaces(in_context, covering)

    async def recent_turns(self, session_ids: Sequence[str], count: int) -> list[RecentTurn]:
        if not session_ids:
            return []
        rows = await self._read_rows(*self._recent_statement(session_ids, count))
        return [RecentTurn(r[0], r[1], r[2], bool(r[3]), bool(r[4])) for r in rows]

    def _recent_statement(
        self, session_ids: Sequence[str], count: int
    ) -> tuple[str, Sequence[Any]]:
        """The statement of :meth:`recent_turns` and its parameters (a backend may
        spell it for its planner)."""
        return _RECENT.format(ids=self._ID_TABLE), (self._id_list(session_ids), count, False)


def _at(row: tuple[Any, ...]) -> int:
    return int(row[2])
