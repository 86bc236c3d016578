"""``describe``: what a summary, message or file ID stands for and where it is."""

from __future__ import annotations

from mnesis.errors import FileReferenceNotFoundError, InvalidArgumentError, MessageNotFoundError
from mnesis.models.ids import is_valid_id
from mnesis.retrieval.render import full_message_text
from mnesis.retrieval.results import (
    DescribeResult,
    FileDescription,
    MessageDescription,
    SummaryDescription,
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
    return FileDescription(
        id=ref.file_id,
        content_id=ref.content_id,
        path=ref.path,
        file_type=ref.file_type,
        token_count=ref.token_count,
        byte_size=ref.byte_size,
        exploration_summary=ref.exploration_summary,
    )


async def _describe_summary(
    store: ImmutableStore, scope: RetrievalScope, summary_id: str
) -> SummaryDescription:
    record = await scope.load_summary(summary_id)
    children = await store.get_summary_parent_ids(summary_id)
    in_context = any(
        item.item_id == summary_id
        for item in await store.get_context_items(record.session_id, item_type="summary")
    )
    return SummaryDescription(
        id=record.id,
        session_id=record.session_id,
        summary_kind=record.kind,
        depth=record.depth,
        level=record.level,
        created_at=record.created_at,
        token_count=record.token_count,
        content=record.content,
        child_summary_ids=children,
        fan_in=len(children),
        parent_summary_ids=await store.get_summaries_merging(summary_id),
        source_message_count=record.source_message_count,
        span_start_message_id=record.span_start_message_id,
        span_end_message_id=record.span_end_message_id,
        direct_source_message_ids=(
            [] if children else await store.get_summary_source_ids(summary_id)
        ),
        file_ids=record.file_ids,
        in_context=in_context,
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
    in_context = bool(await store.messages_in_context(session_id, [message_id]))
    covering = (
        None
        if in_context
        else (await store.covering_context_summaries(session_id, [message_id]))[message_id]
    )
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
        in_context=in_context,
        covering_summary_id=covering,
        leaf_summary_ids=await store.get_leaf_summaries_of_message(message_id),
    )
