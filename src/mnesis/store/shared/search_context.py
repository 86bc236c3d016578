"""The neighbour context of a conversation part, computed where it is appended.

Each conversation part (text, reasoning, file reference) is indexed with a
``search_context``: a first line with the speaker and the UTC date
(``user 2026-11-17 tuesday november``), then the indexed text of the previous two
``text`` parts of its session (from non-summary messages at most six ``seq`` back),
newest first, each as ``role: text`` cut to 600 characters with newlines as spaces.
Tool parts and parts without indexed text get none. It is the text the SQL of
migration ``m004_search_context`` computed in a trigger, now computed by the writer:
:func:`search_context` is the pure function, :class:`NeighbourCache` remembers the
last turns of each session a store wrote, and :data:`NEIGHBOURS_SELECT` is the one
indexed query for a session the cache does not know.
"""

from __future__ import annotations

import datetime
import functools
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "NEIGHBOURS_SELECT",
    "SESSION_PARTS_SELECT",
    "WINDOW",
    "Contexts",
    "Neighbour",
    "NeighbourCache",
    "neighbour_args",
    "rebuild_contexts",
    "search_context",
]

WINDOW = 6
"""How many ``seq`` back a neighbour may lie."""
_NEIGHBOURS = 2
_CUT = 600
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

Neighbour = tuple[int, str, str]
"""``(seq, role, text_content)`` of a previous text part (lists of them: newest first)."""

NEIGHBOURS_SELECT = (
    "SELECT nm.seq, nm.role, np.text_content FROM messages nm "
    "JOIN message_parts np ON np.message_id = nm.id "
    "WHERE nm.session_id = ? AND NOT nm.is_summary AND nm.seq < ? AND nm.seq >= ? "
    "AND np.part_type = 'text' AND np.text_content IS NOT NULL "
    "ORDER BY nm.seq DESC, np.ordinal LIMIT 2"
)
"""The neighbours of the message at ``seq`` (args: :func:`neighbour_args`)."""


def neighbour_args(session_id: str, seq: int) -> tuple[str, int, int]:
    """The arguments of :data:`NEIGHBOURS_SELECT` for the message at ``seq``."""
    return (session_id, seq, seq - WINDOW)


@functools.lru_cache(maxsize=1024)
def _day_line(role: str, days: int) -> str | None:
    """The first line of a context: speaker, then the UTC day ``days`` after 1970-01-01."""
    try:
        day = _EPOCH + datetime.timedelta(days=days)
    except OverflowError:
        return None  # Outside the years SQLite's date() formats: no context.
    return f"{role} {day.date().isoformat()} {_WEEKDAYS[day.weekday()]} {_MONTHS[day.month - 1]}"


def _meta(role: str, created_at_ms: int) -> str | None:
    # SQLite's ``created_at / 1000`` is integer division truncating toward zero.
    seconds = abs(created_at_ms) // 1000 * (1 if created_at_ms >= 0 else -1)
    return _day_line(role, seconds // 86_400)


def search_context(
    role: str, created_at_ms: int, previous: Sequence[tuple[str, str]]
) -> str | None:
    """The ``search_context`` of a conversation part of a ``role`` message created at
    ``created_at_ms``, whose neighbours are ``previous`` (``(role, text_content)`` of
    the previous text parts, newest first; only the first two count); None for a date
    outside the years 1-9999."""
    meta = _meta(role, created_at_ms)
    if meta is None:
        return None
    lines = [meta]
    for neighbour_role, text in previous[:_NEIGHBOURS]:
        lines.append(f"{neighbour_role}: " + text[:_CUT].replace("\n", " "))
    return "\n".join(lines)


SESSION_PARTS_SELECT = (
    "SELECT p.rowid, m.seq, m.role, m.created_at, m.is_summary, p.part_type, "
    "p.text_content FROM message_parts p JOIN messages m ON m.id = p.message_id "
    "WHERE p.session_id = ? ORDER BY p.rowid"
)
"""Every part of a session in the order it was written (args: the session ID), for
:func:`rebuild_contexts`."""


def rebuild_contexts(rows: Iterable[Sequence[Any]]) -> dict[int, str | None]:
    """The ``search_context`` each indexed part of a session was written with, rebuilt
    from the rows of :data:`SESSION_PARTS_SELECT` (row key → context; None for tool
    parts), without reading the stored column.

    Exact because history is append-only: the neighbours a writer saw were the text
    parts already stored, i.e. those with a lower row key, and they never change.
    (Parts indexed by migration ``m004_search_context`` from rows that existed before
    it saw every neighbour present then; they differ only where a part was appended to
    an older message after a newer one had been written.)
    """
    texts: dict[int, list[tuple[str, str]]] = {}
    out: dict[int, str | None] = {}
    for key, seq, role, created_at, is_summary, part_type, text in rows:
        if text is None:
            continue
        if part_type == "tool":
            out[key] = None
        else:
            previous: list[tuple[str, str]] = []
            for earlier in range(seq - 1, seq - WINDOW - 1, -1):
                previous += texts.get(earlier, ())
                if len(previous) >= _NEIGHBOURS:
                    break
            out[key] = search_context(role, created_at, previous)
        if part_type == "text" and not is_summary:
            texts.setdefault(seq, []).append((role, text))
    return out


class NeighbourCache:
    """The last turns of the sessions a store appended to (bounded, per store).

    An entry is trusted only for the message right after the last one this store
    appended to the session, and only while no other writer added parts anywhere: the
    cache keeps the highest part row key its own writes left (:attr:`watermark`), and
    a write that finds another is to forget everything (:meth:`check`). Anything not
    known here is read with :data:`NEIGHBOURS_SELECT`. Entries change only after the
    write that produced them committed (:meth:`Contexts.commit`).
    """

    def __init__(self, sessions: int = 256) -> None:
        self._limit = sessions
        self._recent: OrderedDict[str, tuple[int, list[Neighbour]]] = OrderedDict()
        self.watermark: int | None = None

    def check(self, watermark: int | None) -> None:
        """Forget everything unless ``watermark`` (the highest part row key now) is the
        one this store's last write left."""
        if watermark != self.watermark:
            self._recent.clear()

    def get(self, session_id: str, seq: int) -> list[Neighbour] | None:
        """The neighbours of the message at ``seq``, or None when not known here."""
        recent = self._recent.get(session_id)
        if recent is None or recent[0] != seq - 1:
            return None
        return recent[1]

    def put(self, session_id: str, seq: int, neighbours: list[Neighbour]) -> None:
        """Remember ``neighbours`` as those of the message after ``seq``."""
        self._recent[session_id] = (seq, neighbours)
        self._recent.move_to_end(session_id)
        while len(self._recent) > self._limit:
            self._recent.popitem(last=False)


class Contexts:
    """The contexts of one write transaction's appended messages.

    Per session: :meth:`needs` says whether its first message's neighbours must be read
    (then :meth:`start` with the rows of :data:`NEIGHBOURS_SELECT`); :meth:`apply` sets
    the contexts of each message's parts in ``seq`` order; :meth:`commit` updates the
    cache once the transaction committed.
    """

    def __init__(self, cache: NeighbourCache | None = None) -> None:
        self._cache = cache
        self._state: dict[str, tuple[int, list[Neighbour]]] = {}
        self._checked: int | None = None
        self._watermark: int | None = None

    def check(self, watermark: int | None) -> None:
        """The highest part row key at the start of the write (see
        :meth:`NeighbourCache.check`)."""
        self._checked = watermark

    def finish(self, watermark: int | None) -> None:
        """The highest part row key at the end of the write."""
        self._watermark = watermark

    def needs(self, session_id: str, seq: int) -> bool:
        """Whether the neighbours of the message at ``seq`` must be read."""
        if session_id in self._state:
            return False
        known = None
        if self._cache is not None and self._checked == self._cache.watermark:
            known = self._cache.get(session_id, seq)
        if known is None:
            return True
        self._state[session_id] = (seq - 1, known)
        return False

    def start(self, session_id: str, seq: int, rows: Sequence[Sequence[Any]]) -> None:
        """The neighbours of the message at ``seq``: rows of :data:`NEIGHBOURS_SELECT`."""
        self._state[session_id] = (seq - 1, [(int(r[0]), str(r[1]), str(r[2])) for r in rows])

    def neighbours(self, session_id: str, seq: int) -> list[Neighbour]:
        """The neighbours of the message at ``seq`` (the session started or applied up
        to ``seq - 1``), as :data:`NEIGHBOURS_SELECT` reads them once it is stored."""
        _, known = self._state[session_id]
        return [n for n in known if n[0] >= seq - WINDOW]

    def extend(
        self, session_id: str, role: str, rows: list[tuple[str, int, dict[str, Any]]]
    ) -> None:
        """Parts (encoded, their ``part_type`` and ``text_content`` set) appended to the
        session's last message, a ``role`` message, after it was applied."""
        seq, known = self._state[session_id]
        mine = [
            (seq, role, c["text_content"])
            for _, _, c in rows
            if c["part_type"] == "text" and c["text_content"] is not None
        ]
        same = [n for n in known if n[0] == seq]
        older = [n for n in known if n[0] != seq]
        self._state[session_id] = (seq, (same + mine + older)[:_NEIGHBOURS])

    def apply(
        self,
        session_id: str,
        seq: int,
        role: str,
        created_at_ms: int,
        is_summary: bool,
        rows: list[tuple[str, int, dict[str, Any]]],
    ) -> None:
        """Set the ``search_context`` of the encoded parts of the message at ``seq``:
        tool parts and parts without indexed text get none, the others the context
        :func:`search_context` gives (one pass over the parts: this runs for every
        message a batch or an import appends)."""
        _, known = self._state[session_id]
        floor = seq - WINDOW
        previous = [n for n in known if n[0] >= floor]
        mine: list[Neighbour] = []
        context: str | None = None
        for _, _, columns in rows:
            kind, text = columns["part_type"], columns["text_content"]
            if kind == "tool" or text is None:
                columns["search_context"] = None
                continue
            if context is None:
                context = search_context(role, created_at_ms, [(r, t) for _, r, t in previous])
            columns["search_context"] = context
            if kind == "text" and not is_summary:
                mine.append((seq, role, text))
        self._state[session_id] = (seq, (mine + previous)[:_NEIGHBOURS])

    def commit(self) -> None:
        """Remember each session's last neighbours (after the write committed)."""
        if self._cache is None:
            return
        self._cache.check(self._checked)
        for session_id, (seq, neighbours) in self._state.items():
            self._cache.put(session_id, seq, neighbours)
        self._cache.watermark = self._watermark
