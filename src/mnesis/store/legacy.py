"""0.4.0's store vocabulary over ours: ``Session``, ``RawMessagePart`` and the
``ImmutableStore`` methods 0.4.0's code calls, each a thin wrapper over this store's own.

:class:`LegacyStoreAPI` is a base of :class:`~mnesis.store.immutable.ImmutableStore`;
nothing here touches a backend except through the facade's checked methods. What the
append-only design cannot do is refused with a typed error naming what to use instead
(see ``docs/compat.md``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, TypedDict, overload

from mnesis.errors import AppendOnlyViolationError, InvalidArgumentError, SummaryNotFoundError
from mnesis.models.clock import now_ms
from mnesis.models.message import Message, MessageWithParts
from mnesis.models.parts import MessagePart, ToolPart, ToolState, part_adapter
from mnesis.models.tokens import TokenUsage
from mnesis.store.checks import check_count, check_id
from mnesis.store.facade_maintenance import MaintenanceFacade
from mnesis.store.records import (
    FileReference,
    MessagesQuery,
    PartStatusChange,
    SessionRecord,
)

__all__ = [
    "PAGE",
    "ImmutableFieldError",
    "LegacyStoreAPI",
    "MessageEstimate",
    "MessagesSince",
    "PartStatusUpdate",
    "RawMessagePart",
    "Session",
    "messages_after",
    "new_session_record",
    "raw_parts",
]

ImmutableFieldError = AppendOnlyViolationError
"""0.4.0's name of the error raised when something tries to change stored history."""


@dataclass(slots=True)
class Session:
    """0.4.0's session row. ``ImmutableStore.create_session`` returns one; our own
    reads return :class:`~mnesis.store.records.SessionRecord` (same facts)."""

    id: str
    parent_id: str | None
    created_at: int
    updated_at: int
    model_id: str
    provider_id: str
    agent: str
    title: str | None
    is_active: bool
    metadata: dict[str, Any] | None
    system_prompt: str = ""

    @classmethod
    def from_record(cls, record: SessionRecord) -> Session:
        """The 0.4.0 view of a stored session (``model`` split at its first ``/``)."""
        provider, _, name = record.model.partition("/")
        if not name:
            provider, name = "", record.model
        return cls(
            id=record.id,
            parent_id=record.parent_id,
            created_at=record.created_at,
            updated_at=record.updated_at,
            model_id=name,
            provider_id=provider,
            agent=record.agent,
            title=record.title,
            is_active=record.status == "active",
            metadata=None,
            system_prompt=record.system_prompt,
        )


@dataclass(slots=True)
class RawMessagePart:
    """0.4.0's part row: the part as JSON ``content`` plus its columns. Our store keeps
    typed parts (:data:`~mnesis.models.parts.MessagePart`); :meth:`from_part` and
    :meth:`to_part` convert."""

    id: str
    message_id: str
    session_id: str
    part_type: str
    content: str
    part_index: int = 0
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_state: str | None = None
    compacted_at: int | None = None
    started_at: int | None = None
    completed_at: int | None = None
    token_estimate: int = 0

    @classmethod
    def from_part(
        cls, part: MessagePart, message_id: str, session_id: str, part_index: int
    ) -> RawMessagePart:
        """The row of ``part``, the ``part_index``-th of message ``message_id``."""
        tool = part if isinstance(part, ToolPart) else None
        return cls(
            id=part.id or "",
            message_id=message_id,
            session_id=session_id,
            part_type=part.type,
            content=part.model_dump_json(exclude={"id"}),
            part_index=part_index,
            tool_name=tool.tool_name if tool else None,
            tool_call_id=tool.tool_call_id if tool else None,
            tool_state=tool.status.state if tool else None,
            compacted_at=tool.status.compacted_at if tool else None,
            started_at=tool.status.started_at if tool else None,
            completed_at=tool.status.completed_at if tool else None,
        )

    def to_part(self) -> MessagePart:
        """The typed part of this row; :class:`~mnesis.errors.InvalidArgumentError` when
        ``content`` is not the JSON of a ``part_type`` part."""
        try:
            data = json.loads(self.content) if self.content else {}
        except ValueError as exc:
            raise InvalidArgumentError(f"part {self.id!r}: content is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise InvalidArgumentError(f"part {self.id!r}: content must be a JSON object")
        data.setdefault("type", self.part_type)
        if data["type"] != self.part_type:
            raise InvalidArgumentError(
                f"part {self.id!r}: content is a {data['type']!r} part, not {self.part_type!r}"
            )
        try:
            return part_adapter.validate_python(data)
        except ValueError as exc:
            raise InvalidArgumentError(f"part {self.id!r} is not a valid part: {exc}") from None


PAGE = 500
"""Sessions read per page when ``list_sessions`` filters."""


class PartStatusUpdate(PartStatusChange, total=False):
    """``update_part_status`` keywords: :class:`PartStatusChange` and ``tool_state``,
    0.4.0's name of ``state``."""

    tool_state: ToolState | None


class MessagesSince(MessagesQuery, total=False):
    """``get_messages`` keywords: :class:`MessagesQuery` and 0.4.0's ``since_message_id``."""

    since_message_id: str | None


class MessageEstimate(TypedDict, total=False):
    """``update_message_tokens`` keywords besides ``tokens``, ``cost``, ``finish_reason``."""

    token_estimate: int | None


def raw_parts(message: MessageWithParts) -> list[RawMessagePart]:
    """The parts of ``message`` as 0.4.0's rows."""
    return [
        RawMessagePart.from_part(part, message.id, message.message.session_id, index)
        for index, part in enumerate(message.parts)
    ]


class LegacyStoreAPI(MaintenanceFacade):
    """The ``ImmutableStore`` methods of 0.4.0 that have no namesake here, as wrappers."""

    @overload  # type: ignore[override]
    async def append_part(
        self, part: str, message_part: MessagePart, *, token_estimate: int | None = None
    ) -> str: ...

    @overload
    async def append_part(
        self, part: RawMessagePart, message_part: None = None, *, token_estimate: int | None = None
    ) -> RawMessagePart: ...

    async def append_part(
        self,
        part: str | RawMessagePart,
        message_part: MessagePart | None = None,
        *,
        token_estimate: int | None = None,
    ) -> str | RawMessagePart:
        """Append one part: ``append_part(message_id, part)`` returns the new part's ID;
        0.4.0's ``append_part(raw_part)`` (a :class:`RawMessagePart` row naming its
        message) returns the row with its new ID."""
        if isinstance(part, RawMessagePart):
            estimate = part.token_estimate if token_estimate is None else token_estimate
            check_count(estimate, "token_estimate")
            typed = part.to_part()
            (part_id,) = await self.append_parts(part.message_id, [typed], part_tokens=[estimate])
            return replace(part, id=part_id, token_estimate=estimate)
        if message_part is None:
            raise InvalidArgumentError("append_part(message_id, part) needs the part")
        estimate = token_estimate or 0
        check_count(estimate, "token_estimate")
        (part_id,) = await self.append_parts(part, [message_part], part_tokens=[estimate])
        return part_id

    async def get_messages_with_parts(
        self, session_id: str, *, since_message_id: str | None = None
    ) -> list[MessageWithParts]:
        """The session's messages with their parts, oldest first (those after
        ``since_message_id`` only, when given): ``get_messages``."""
        return messages_after(await self.get_messages(session_id), since_message_id)

    async def get_messages_with_parts_by_ids(
        self, message_ids: list[str]
    ) -> list[MessageWithParts]:
        """``get_messages_by_ids``."""
        return await self.get_messages_by_ids(message_ids)

    async def get_parts(self, message_id: str) -> list[RawMessagePart]:
        """The parts of one message as 0.4.0's rows (``get_message(id).parts`` holds
        them typed)."""
        return raw_parts(await self.get_message(message_id))

    async def get_raw_parts_for_messages(self, message_ids: list[str]) -> list[RawMessagePart]:
        """The parts of several messages as 0.4.0's rows, message by message."""
        messages = await self.get_messages_by_ids(message_ids)
        return [row for message in messages for row in raw_parts(message)]

    async def get_last_summary_message(self, session_id: str) -> Message | None:
        """The marker message of the newest summary in the session's context view, or
        ``None`` when it holds no summary."""
        items = await self.get_context_items(session_id)
        summary_ids = [i.item_id for i in items if i.item_type == "summary"]
        if not summary_ids:
            return None
        summaries = await self.get_summaries(summary_ids)
        newest = max(summaries, key=lambda s: (s.created_at, s.id))
        if newest.message_id is None:
            return None
        return (await self.get_message(newest.message_id)).message

    async def get_file_reference_by_path(self, path: str) -> FileReference | None:
        """The newest file reference recorded for ``path`` (as ``handle_file`` stored
        it: absolute), or ``None``."""
        check_id(path, "path")
        return await self.backend.get_file_reference_by_path(path)

    async def sum_token_usage(self, session_id: str) -> TokenUsage:
        """``session_token_usage``: the token usage of every message of the session."""
        return await self.session_token_usage(session_id)

    async def soft_delete_session(self, session_id: str) -> None:
        """0.4.0's soft delete: the session is marked closed (``set_session_status``);
        nothing is deleted, and ``list_sessions(active_only=True)`` leaves it out."""
        await self.set_session_status(session_id, "closed")

    async def swap_context_items(
        self, session_id: str, remove_item_ids: list[str], summary_id: str
    ) -> None:
        """Replace the items ``remove_item_ids`` of the context view by the summary
        ``summary_id``, at the first one's place (rows and lineage are untouched).
        Summaries are normally committed with their swap in one transaction by
        ``SummaryDAGStore.insert_node``; this is the view change alone."""
        summary = await self.get_summary(summary_id)
        if summary.session_id != session_id:
            raise SummaryNotFoundError(summary_id)
        removed = set(remove_item_ids)
        items = await self.get_context_items(session_id)
        if not removed & {i.item_id for i in items}:
            raise InvalidArgumentError(
                f"none of remove_item_ids is in the context of session {session_id}"
            )
        keep: list[tuple[str, str, int]] = []
        for item in items:
            if item.item_id not in removed:
                keep.append((item.item_type, item.item_id, item.tokens))
            elif not any(k[1] == summary_id for k in keep):
                keep.append(("summary", summary_id, summary.token_count))
        await self.replace_context_items(session_id, keep)

    async def batch_set_compacted_at(self, part_ids: list[str], compacted_at: int) -> None:
        """Tombstone the outputs of the tool parts ``part_ids`` (``update_part_status``
        with ``compacted_at``): the outputs stay stored, the context shows a stand-in."""
        for part_id in part_ids:
            await self.update_part_status(part_id, compacted_at=compacted_at)


def messages_after(messages: list[MessageWithParts], since: str | None) -> list[MessageWithParts]:
    """The messages after the one with ID ``since`` (all for ``None``; none when absent)."""
    if since is None:
        return messages
    for index, message in enumerate(messages):
        if message.id == since:
            return messages[index + 1 :]
    return []


def new_session_record(
    session_id: str,
    *,
    model_id: str,
    provider_id: str,
    agent: str,
    parent_id: str | None,
    title: str | None,
    system_prompt: str,
) -> SessionRecord:
    """The row 0.4.0's ``create_session(id, model_id=..., provider_id=..., ...)`` means
    (``model`` is ``provider/model_id`` when a provider is given)."""
    now = now_ms()
    return SessionRecord(
        id=session_id,
        model=f"{provider_id}/{model_id}" if provider_id else model_id,
        agent=agent,
        parent_id=parent_id,
        system_prompt=system_prompt,
        title=title,
        created_at=now,
        updated_at=now,
    )
