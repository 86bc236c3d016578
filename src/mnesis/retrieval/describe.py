"""``describe``: what a summary, message or file ID stands for and where it is."""

from __future__ import annotations

from mnesis.errors import FileReferenceNotFoundError, InvalidArgumentError, MessageNotFoundError
from mnesis.models.ids import is_valid_id
from mnesis.retrieval.render import full_message_text
from mnesis.retrieval.results import (
    FILE_FIELDS,
    SUMMARY_FIELDS,
    DescribeResult,
    FileDescription,
    MessageDescription,
    SummaryDescription,
    copied,
)
from mnesis.retrieval.scope import RetrievalScope
from mnesis.store.immutable import ImmutableStore

__all__ = ["describe"]

_CONTENT_ID_LEN = 64
_PREVIEW_CHARS = 300


async def describe(store: ImmutableStore, scope: RetrievalScope, object_id: str) -> DescribeResult:
    """Describe a summary (``sum_``), file (``file_`` or content hash) or message (``msg_``).

    Raises ``InvalidArgumentError`` for malformed IDs, a ``NotFoundError`` subclass
    for unknown ones and ``OutOfScopeError`` for IDs outside ``scope``.
    """
    if not isinstance(object_id, str):
        raise InvalidArgumentError(f"an ID must be a string, got {type(object_id).__name__}")
    object_id = object_id.strip()
    if is_valid_id(object_id, "sum"):
        return await _describe_summary(store, scope, object_id)
    if is_valid_id(object_id, "msg"):
        return await _describe_message(store, scope, object_id)
    if object_id.startswith("file_") or (
        len(object_id) == _CONTENT_ID_LEN and all(c in "0123456789abcdef" for c in object_id)
    ):
        return await _describe_file(store, scope, object_id)
    raise InvalidArgumentError(
        f"{object_id[:80]!r} is not a summary (sum_…), message (msg_…) or file (file_…) ID"
    )


async def _describe_file(
    store: ImmutableStore, scope: RetrievalScope, file_id: str
) -> FileDescription:
    ref = await store.get_file_reference(file_id)
    if ref is None:
        raise FileReferenceNotFoundError(file_id)
    await scope.check_file(ref)
    return FileDescription(id=ref.file_id, **copied(ref, FILE_FIELDS))


async def _describe_summary(
    store: ImmutableStore, scope: RetrievalScope, summary_id: str
) -> SummaryDescription:
    record = await scope.load_summary(summary_id)
    children = await store.get_summary_parent_ids(summary_id)
    places = await store.context_places([], [summary_id])
    return SummaryDescription(
        **copied(record, SUMMARY_FIELDS),
        session_id=record.session_id,
        summary_kind=record.kind,
        child_summary_ids=children,
        fan_in=len(children),
        parent_summary_ids=await store.get_summaries_merging(summary_id),
        direct_source_message_ids=(
            [] if children else await store.get_summary_source_ids(summary_id)
        ),
        file_ids=record.file_ids,
        in_context=summary_id in places.in_context,
    )


async def _describe_message(
    store: ImmutableStore, scope: RetrievalScope, message_id: str
) -> MessageDescription:
    found = await store.get_messages_by_ids([message_id])
    if not found:
        raise MessageNotFoundError(message_id)
    message = found[0]
    session_id = message.message.session_id
    scope.check_session(session_id, message_id)
    places = await store.context_places([message_id], [])
    preview = " ".join(full_message_text(message).split())[:_PREVIEW_CHARS]
    return MessageDescription(
        id=message_id,
        session_id=session_id,
        role=message.role,
        created_at=message.message.created_at,
        token_estimate=message.message.token_estimate,
        is_summary=message.message.is_summary,
        part_types=[p.type for p in message.parts],
        preview=preview,
        in_context=message_id in places.in_context,
        covering_summary_id=places.covering.get(message_id),
        leaf_summary_ids=await store.get_leaf_summaries_of_message(message_id),
    )
