"""0.4.0's argument forms of :class:`~mnesis.store.immutable.ImmutableStore`'s methods,
turned into the records of the store interface (the facade checks the result, then
delegates): a session given by its ID and fields, ``list_sessions``'s filters, a token
change given by position, ``tool_state``, ``since_message_id``."""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from mnesis.errors import InvalidArgumentError
from mnesis.models.tokens import TokenUsage
from mnesis.store.base import SessionRecord, StoreBackend
from mnesis.store.checks import check_id, check_instance
from mnesis.store.legacy import (
    PAGE,
    MessageEstimate,
    MessagesSince,
    PartStatusUpdate,
    new_session_record,
)
from mnesis.store.records import MessageChange, MessagesQuery, PartStatusChange

__all__ = [
    "SessionFields",
    "filtered_sessions",
    "message_change",
    "messages_query",
    "part_status_change",
    "session_record_of",
]


class SessionFields(TypedDict):
    """0.4.0's ``create_session`` keywords (see
    :func:`~mnesis.store.legacy.new_session_record`)."""

    model_id: str
    provider_id: str
    agent: str
    parent_id: str | None
    title: str | None
    system_prompt: str


def session_record_of(
    session: SessionRecord | str, metadata: dict[str, Any] | None, **fields: Unpack[SessionFields]
) -> SessionRecord:
    """The record ``create_session`` stores: ``session`` itself, or the record of its ID
    and ``fields`` (``metadata`` is checked, not stored)."""
    if isinstance(session, SessionRecord):
        return session
    check_id(session, "session id")
    if metadata is not None:
        check_instance(metadata, "metadata", dict)
    return new_session_record(session, **fields)


async def filtered_sessions(
    backend: StoreBackend,
    parent_id: str | None,
    active_only: bool,
    limit: int,
    offset: int,
) -> list[SessionRecord]:
    """One page of the sessions that pass 0.4.0's filters (children of ``parent_id``,
    only active ones), newest first, read from the backend :data:`PAGE` rows at a time."""
    found: list[SessionRecord] = []
    skipped, page = 0, 0
    while len(found) < limit:
        rows = await backend.list_sessions(limit=PAGE, offset=page * PAGE)
        for row in rows:
            if (parent_id is None or row.parent_id == parent_id) and (
                not active_only or row.status == "active"
            ):
                if skipped < offset:
                    skipped += 1
                elif len(found) < limit:
                    found.append(row)
        if len(rows) < PAGE:
            break
        page += 1
    return found


def message_change(
    tokens: TokenUsage | None,
    cost: float | None,
    finish_reason: str | None,
    estimate: MessageEstimate,
) -> MessageChange:
    """The change ``update_message_tokens`` was given (what is None is left out)."""
    change: MessageChange = {}
    if "token_estimate" in estimate:
        change["token_estimate"] = estimate["token_estimate"]
    if tokens is not None:
        change["tokens"] = tokens
    if cost is not None:
        change["cost"] = cost
    if finish_reason is not None:
        change["finish_reason"] = finish_reason
    return change


def part_status_change(change: PartStatusUpdate) -> PartStatusChange:
    """``update_part_status``'s keywords with 0.4.0's ``tool_state`` named ``state``."""
    given = dict(change)
    if "tool_state" in given:
        if given.get("state") is not None:
            raise InvalidArgumentError("give state or tool_state (0.4.0's name), not both")
        given["state"] = given.pop("tool_state")
    status: PartStatusChange = PartStatusChange(**given)  # type: ignore[typeddict-item]
    return status


def messages_query(query: MessagesSince) -> tuple[MessagesQuery, str | None]:
    """``get_messages``'s keywords as the interface's query, and 0.4.0's
    ``since_message_id`` apart."""
    given = dict(query)
    since = query.get("since_message_id")
    given.pop("since_message_id", None)
    backend_query = MessagesQuery(**given)  # type: ignore[typeddict-item]
    return backend_query, since
