"""A backend's ``messages`` collaborator, engine-neutral (:class:`BaseMessages`): message
and part statements written once for both engines: the keyword fronts of the interface,
the permitted changes (message tokens, tool status, tombstones) and the reads that are
one statement each (each engine's subclass adds the appends and the reads of messages
with their parts)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Unpack

from mnesis.errors import MessageNotFoundError, PartNotFoundError
from mnesis.models.clock import now_ms
from mnesis.models.message import MessageWithParts
from mnesis.models.parts import MessagePart, ToolState
from mnesis.models.tokens import TokenUsage
from mnesis.store.records import AppendedMessage, MessageChange, NewMessage
from mnesis.store.shared.chain import (
    HEAD_SELECT,
    LINK_INSERT,
    chain_links,
    result_link,
    settled,
)
from mnesis.store.shared.rows import (
    TOOL_STATUS_UPDATE,
    EncodedParts,
    encode_parts,
    message_update_sets,
    tombstone_rows,
    tool_status_args,
)
from mnesis.store.shared.sql import CONTEXT_TOKENS_UPDATE, TOMBSTONE, select_list
from mnesis.store.shared.statements import DB, StorePart
from mnesis.store.shared.usage import ADJUST, adjust_args

__all__ = ["BaseMessages", "MessageRowChange", "message_changes", "part_status_select"]

_MESSAGE_TOKENS_UPDATE = "UPDATE messages SET token_estimate = ? WHERE id = ?"
_PART_STATUS_COLUMNS = (
    "content",
    "part_type",
    "tool_state",
    "compacted_at",
    "started_at",
    "completed_at",
    "text_content",
    "message_id",
)
Planned = list[tuple[str, Sequence[Any]]]
"""Statements to run in order, each with its parameters."""

MessageRowChange = tuple[TokenUsage | None, float | None, str | None, int | None]
"""``(tokens, cost, finish_reason, token_estimate)``: a permitted change of a message
row (None: unchanged)."""


def part_status_select(*, as_text: Sequence[str] = (), lock: str = "") -> str:
    """:attr:`BaseMessages.PART_STATUS_SELECT`: the part ``?``'s columns that
    :func:`~mnesis.store.shared.rows.tool_status_args` takes, then its message ID and
    session ID; ``as_text`` columns cast to text (``p.`` prefixed), ``lock`` what
    follows the ``WHERE`` clause (the locks the update needs)."""
    columns = select_list(
        [f"p.{c}" for c in (*_PART_STATUS_COLUMNS, "session_id")], [f"p.{c}" for c in as_text]
    )
    return f"SELECT {columns} FROM message_parts p WHERE p.id = ?{lock}"


def message_changes(message_id: str, change: MessageRowChange, *, kept: bool) -> Planned:
    """The statements of a change of an existing message row (and of its context item's
    tokens, and of its session's kept usage sums when ``kept``); none when nothing
    changes."""
    found = message_update_sets(*change)
    if found is None:
        return []
    sets, args = found
    planned: Planned = []
    if kept and change[0] is not None:
        planned.append((ADJUST, adjust_args(message_id, change[0])))
    planned.append((f"UPDATE messages SET {sets} WHERE id = ?", (*args, message_id)))
    if change[3] is not None:
        planned.append((CONTEXT_TOKENS_UPDATE, (change[3], message_id)))
    return planned


class BaseMessages(StorePart[DB]):
    """``append_parts``, ``get_messages`` and ``update_message_tokens`` as the interface
    takes them; ``update_part_status``, ``tombstone_parts``, ``get_message``,
    ``count_messages`` and ``find_tool_part`` (``store/sqlite/messages.py``,
    ``store/postgres/messages.py``).

    An engine gives :meth:`get_messages_by_ids`, :meth:`session_token_usage`,
    :meth:`_append_messages`, :meth:`_append_parts` and :meth:`_messages`, and sets
    :attr:`ROW_KEY` (the column that orders parts by when they were written),
    :attr:`MESSAGE_LOCK` (reads the message ``?``) and :attr:`PART_STATUS_SELECT` (see
    :func:`part_status_select`), both locking the row for the update where the database
    needs it.
    """

    ROW_KEY: ClassVar[str]
    MESSAGE_LOCK: ClassVar[str]
    PART_STATUS_SELECT: ClassVar[str]

    @abstractmethod
    async def get_messages_by_ids(self, message_ids: Sequence[str]) -> list[MessageWithParts]:
        """The messages of ``message_ids`` that exist, in that order."""

    @abstractmethod
    async def session_token_usage(self, session_id: str) -> TokenUsage:
        """Sum of recorded model token usage over a session."""

    @abstractmethod
    async def _append_messages(
        self, batch: Sequence[tuple[NewMessage, EncodedParts]], now: int
    ) -> list[AppendedMessage]:
        """``append_messages`` of messages with their parts encoded, written at ``now``."""

    @abstractmethod
    async def _append_parts(
        self, message_id: str, rows: EncodedParts, change: MessageRowChange
    ) -> list[str]:
        """``append_parts`` of encoded parts, with the message's ``change`` in the same
        transaction."""

    @abstractmethod
    async def _messages(
        self, session_id: str, summaries: bool, after_seq: int, limit: int | None
    ) -> list[MessageWithParts]:
        """``get_messages``."""

    async def append_messages(self, batch: Sequence[NewMessage]) -> list[AppendedMessage]:
        prepared = [(item, encode_parts(item.parts, item.part_tokens)) for item in batch]
        return await self._append_messages(prepared, now_ms())

    async def append_parts(
        self,
        message_id: str,
        parts: Sequence[MessagePart],
        *,
        part_tokens: Sequence[int] | None = None,
        tokens: TokenUsage | None = None,
        finish_reason: str | None = None,
        token_estimate: int | None = None,
    ) -> list[str]:
        rows = encode_parts(parts, part_tokens)
        return await self._append_parts(
            message_id, rows, (tokens, None, finish_reason, token_estimate)
        )

    async def get_messages(
        self,
        session_id: str,
        *,
        include_summaries: bool = True,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[MessageWithParts]:
        return await self._messages(session_id, include_summaries, after_seq, limit)

    async def update_message_tokens(self, message_id: str, **change: Unpack[MessageChange]) -> None:
        row_change = (
            change.get("tokens"),
            change.get("cost"),
            change.get("finish_reason"),
            change.get("token_estimate"),
        )
        planned = message_changes(message_id, row_change, kept=self.db.usage_kept)
        if not planned:
            return

        def _plan(row: tuple[Any, ...] | None) -> Planned:
            if row is None:
                raise MessageNotFoundError(message_id)
            return planned

        await self.db.change_after(self.MESSAGE_LOCK, (message_id,), _plan)

    async def update_part_status(
        self,
        part_id: str,
        *,
        state: ToolState | None = None,
        compacted_at: int | None = None,
        output: str | None = None,
        error_message: str | None = None,
        started_at: int | None = None,
        completed_at: int | None = None,
        token_estimate: int | None = None,
        message_token_estimate: int | None = None,
    ) -> None:
        def _plan(row: tuple[Any, ...] | None) -> Planned:
            if row is None:
                raise PartNotFoundError(part_id)
            args = tool_status_args(
                part_id,
                row,
                state=state,
                compacted_at=compacted_at,
                output=output,
                error_message=error_message,
                started_at=started_at,
                completed_at=completed_at,
                token_estimate=token_estimate,
            )
            planned: Planned = [(TOOL_STATUS_UPDATE, args)]
            if len(row) > 9 and settled(row[2], args[0]):
                text = row[6] if args[5] is None else args[5]
                link = result_link(row[8], part_id, args[4], text, args[0])
                heads = {} if row[9] is None else {row[8]: (int(row[9]), bytes(row[10]))}
                planned += [(LINK_INSERT, r) for r in chain_links(heads, [link])]
            if message_token_estimate is not None:
                owner = (message_token_estimate, row[7])
                planned += [(_MESSAGE_TOKENS_UPDATE, owner), (CONTEXT_TOKENS_UPDATE, owner)]
            return planned

        await self.db.change_after(
            self.PART_STATUS_SELECT,
            (part_id,),
            _plan,
            then=HEAD_SELECT if self.db.chained else None,
        )

    async def tombstone_parts(
        self,
        parts: Sequence[tuple[str, int, int]],
        message_estimates: Sequence[tuple[str, int]],
    ) -> None:
        rows = tombstone_rows(parts, message_estimates)
        await self.db.change_many(list(zip(TOMBSTONE, rows, strict=True)))

    async def get_message(self, message_id: str) -> MessageWithParts:
        found = await self.get_messages_by_ids([message_id])
        if not found:
            raise MessageNotFoundError(message_id)
        return found[0]

    async def count_messages(self, session_id: str) -> int:
        rows = await self.db.rows(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
        )
        return int(rows[0][0])

    async def find_tool_part(self, session_id: str, tool_call_id: str) -> tuple[str, str]:
        rows = await self.db.rows(
            "SELECT id, message_id FROM message_parts WHERE session_id = ? "
            f"AND tool_call_id = ? ORDER BY {self.ROW_KEY} DESC LIMIT 1",
            (session_id, tool_call_id),
        )
        if not rows:
            raise PartNotFoundError(tool_call_id)
        return rows[0][0], rows[0][1]
