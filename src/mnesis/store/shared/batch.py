"""A batch of new messages as the rows of one ``executemany`` per table, the same on
both backends (``append_batch``).

The rows come from the row builders the one-message append uses
(:func:`~mnesis.store.shared.rows.message_row`, :func:`~mnesis.store.shared.rows.part_rows`),
so a batch and the same messages appended one by one store identical rows.
:class:`BaseBatch` is the engine-neutral base of a backend's ``batch`` collaborator.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnesis.store.records import AppendedMessage, NewMessage
from mnesis.store.shared.chain import Link, message_link, part_link
from mnesis.store.shared.rows import EncodedParts, encode_parts, message_row, part_rows
from mnesis.store.shared.search_context import Contexts, Neighbour
from mnesis.store.shared.statements import DB, StorePart

__all__ = [
    "CONTEXT_MESSAGE_INSERT",
    "BaseBatch",
    "BatchRows",
    "PreparedRows",
    "RowPreparer",
    "SessionStart",
    "batch_links",
    "batch_rows",
    "encode_batch",
]

CONTEXT_MESSAGE_INSERT = (
    "INSERT INTO context_items (session_id, position, item_type, message_id, tokens, "
    "created_at) VALUES (?, ?, 'message', ?, ?, ?)"
)
"""The ``context_items`` row of an appended message."""

Prepared = list[tuple[NewMessage, EncodedParts]]


@dataclass(slots=True)
class BatchRows:
    """The parameter rows of each insert of a batch, and where each message landed."""

    messages: list[tuple[Any, ...]] = field(default_factory=list)
    parts: list[tuple[Any, ...]] = field(default_factory=list)
    context: list[tuple[Any, ...]] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    """The rows' hash-chain links, in write order (digests only: the writer chains
    them to each session's head)."""
    appended: list[AppendedMessage] = field(default_factory=list)


def encode_batch(batch: Sequence[NewMessage]) -> Prepared:
    """Each message with its encoded parts (missing part IDs assigned)."""
    return [(item, encode_parts(item.parts, item.part_tokens)) for item in batch]


def batch_rows(
    prepared: Prepared,
    next_seq: dict[str, int],
    next_position: dict[str, int],
    now: int,
    *,
    summary_flag: type[int] | type[bool],
    contexts: Contexts,
    landed: bool = True,
) -> BatchRows:
    """The rows of ``prepared``: ``next_seq`` / ``next_position`` give each session's next
    ``seq`` and context position (and are advanced); ``summary_flag`` is how the backend
    stores ``is_summary`` (``int`` on SQLite, ``bool`` on PostgreSQL); ``contexts`` knows
    each session's neighbours before the batch (it sets the parts' ``search_context``).
    ``landed=False`` leaves ``appended`` empty (for a caller that does not read it)."""
    out = BatchRows()
    for item, rows in prepared:
        m = item.message
        sid = m.session_id
        seq = next_seq[sid]
        next_seq[sid] = seq + 1
        message = message_row(m, seq, summary_flag(m.is_summary))
        out.messages.append(message)
        contexts.apply(sid, seq, m.role, m.created_at, m.is_summary, rows)
        parts = part_rows(m.id, sid, 0, rows, now)
        out.parts += parts
        out.links.append(message_link(message))
        out.links += map(part_link, parts)
        position = None
        if item.in_context:
            position = next_position[sid]
            next_position[sid] = position + 1
            out.context.append((sid, position, m.id, m.token_estimate, now))
        if landed:
            out.appended.append(AppendedMessage(m.id, seq, position, tuple(r[0] for r in rows)))
    return out


SessionStart = tuple[int, int, list[Neighbour]]
"""Where a session stands before a batch: its next ``seq``, next context position and
the neighbours (:data:`~mnesis.store.shared.search_context.Neighbour`, newest first) of
the message at that ``seq``."""


@dataclass(slots=True)
class PreparedRows:
    """A batch as the rows of its inserts, built away from the store (a transcript
    import's parser process) by :class:`RowPreparer`, with what they assume of each
    session (:data:`SessionStart`), which the store checks before it writes them."""

    starts: dict[str, SessionStart]
    rows: BatchRows


class RowPreparer:
    """Builds the rows of successive batches of new messages with the store's own code
    (:func:`encode_batch`, :func:`batch_rows`), for a producer that is the only writer
    of its sessions while it runs: it carries each session's next ``seq``, position and
    neighbours from one batch to the next. ``starts`` gives them for sessions that exist
    already (as :meth:`~mnesis.store.sqlite.batch.SQLiteBatch.batch_starts` reads them); any
    other session is taken to be new (empty)."""

    def __init__(self, starts: dict[str, SessionStart]) -> None:
        self._seq = {sid: start[0] for sid, start in starts.items()}
        self._position = {sid: start[1] for sid, start in starts.items()}
        self._contexts = Contexts()
        for sid, (seq, _, neighbours) in starts.items():
            self._contexts.start(sid, seq, neighbours)

    def _start(self, sid: str) -> SessionStart:
        if sid not in self._seq:
            self._seq[sid], self._position[sid] = 1, 1
            self._contexts.start(sid, 1, [])
        seq = self._seq[sid]
        return seq, self._position[sid], self._contexts.neighbours(sid, seq)

    def extend(self, session_id: str, role: str, parts: EncodedParts) -> None:
        """Encoded parts appended to the session's last message, a ``role`` message,
        before the next batch."""
        self._start(session_id)
        self._contexts.extend(session_id, role, parts)

    def prepare(self, prepared: Prepared, now: int) -> PreparedRows:
        """The rows of ``prepared`` (checked and encoded by the store's code), written at
        ``now`` (``rows.appended`` left empty: the store does not return it)."""
        starts: dict[str, SessionStart] = {}
        for item, _ in prepared:
            sid = item.message.session_id
            if sid not in starts:
                starts[sid] = self._start(sid)
        rows = batch_rows(
            prepared,
            self._seq,
            self._position,
            now,
            summary_flag=int,
            contexts=self._contexts,
            landed=False,
        )
        return PreparedRows(starts, rows)


def batch_links(rows: BatchRows) -> list[Link]:
    """The chain links of ``rows``: those computed with them, or (rows that crossed a
    process boundary without them) computed now from the message and part rows, each
    message followed by its parts."""
    if rows.links or not rows.messages:
        return rows.links
    by_message: dict[str, list[Link]] = {}
    for part in rows.parts:
        by_message.setdefault(part[1], []).append(part_link(part))
    out: list[Link] = []
    for message in rows.messages:
        out.append(message_link(message))
        out += by_message.get(message[0], [])
    return out


class BaseBatch(StorePart[DB]):
    """A backend's ``batch`` collaborator: a large batch (a transcript import's) in one
    transaction, one statement execution per table (``store/sqlite/batch.py``,
    ``store/postgres/batch.py``)."""

    @abstractmethod
    async def append_batch(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        """Append the batch: the rows ``append_messages`` writes, in one transaction."""
