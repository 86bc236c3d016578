"""``describe``: what a summary, message or file ID stands for and where it is."""

from __future__ import annotations

from typing import Any

from mnesis.errors import FileReferenceNotFoundError, InvalidArgumentError, MessageNotFoundError
from mnesis.models.ids import is_valid_id
from mnesis.models.ledger import ENTITY_KINDS, LedgerEntity, LossLedger
from mnesis.models.parts import CompactionPart
from mnesis.models.summary import SummaryRecord
from mnesis.retrieval.render import full_message_text
from mnesis.retrieval.results import (
    FILE_FIELDS,
    SUMMARY_FIELDS,
    DescribeResult,
    FileDescription,
    LedgerBrief,
    MessageDescription,
    SummaryDescription,
    copied,
)
from mnesis.retrieval.scope import RetrievalScope
from mnesis.store.immutable import ImmutableStore

__all__ = [
    "BRIEF_ENTITIES",
    "brief_lines",
    "describe",
    "ledger_brief",
    "summary_ledger_brief",
]

_CONTENT_ID_LEN = 64
_PREVIEW_CHARS = 300
BRIEF_ENTITIES = 10
"""Dropped entities (and covered IDs) a summary's description lists."""


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
        ledger=await summary_ledger_brief(store, record),
    )


async def summary_ledger_brief(store: ImmutableStore, record: SummaryRecord) -> LedgerBrief | None:
    """The ledger of ``record``'s marker message, in brief (``None`` without one)."""
    if record.message_id is None:
        return None
    markers = await store.get_messages_by_ids([record.message_id])
    ledger = next(
        (
            p.ledger
            for m in markers
            for p in m.parts
            if isinstance(p, CompactionPart) and p.summary_id == record.id and p.ledger
        ),
        None,
    )
    return None if ledger is None else ledger_brief(ledger, record.session_id, record.id)


def ledger_brief(ledger: LossLedger, session_id: str, summary_id: str) -> LedgerBrief:
    """``ledger`` in brief: counts, the first :data:`BRIEF_ENTITIES` dropped entities
    (one of each kind in turn) and covered IDs, and where the rest is."""
    by_kind: dict[str, list[LedgerEntity]] = {}
    for entity in ledger.dropped:
        by_kind.setdefault(entity.kind, []).append(entity)
    shown: list[LedgerEntity] = []
    for i in range(BRIEF_ENTITIES):
        for kind in ENTITY_KINDS:
            if len(shown) < BRIEF_ENTITIES and i < len(by_kind.get(kind, ())):
                shown.append(by_kind[kind][i])
    covered = ledger.removed_message_ids or ledger.removed_summary_ids
    return LedgerBrief(
        tokens_removed=ledger.tokens_removed,
        tokens_added=ledger.tokens_added,
        entities_seen=ledger.entities_seen,
        entities_kept=ledger.entities_kept,
        dropped_total=ledger.dropped_total,
        dropped_by_kind={k: len(by_kind[k]) for k in ENTITY_KINDS if k in by_kind},
        dropped=shown,
        more_dropped=max(0, ledger.dropped_total - len(shown)),
        covered_ids=covered[:BRIEF_ENTITIES],
        covered_count=len(covered),
        see=(
            f"every dropped entity is still in the covered IDs: lcm_expand('{summary_id}') "
            f"reads them, lcm_grep finds a value; `mnesis compactions {session_id}` lists "
            "the whole ledger"
        ),
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


def brief_lines(data: dict[str, Any]) -> list[str]:
    """A ledger brief (``LedgerBrief.model_dump()``) as a few lines of text."""
    kinds = ", ".join(f"{n} {k}" for k, n in data.get("dropped_by_kind", {}).items())
    lines = [
        f"dropped from the view: {data['tokens_removed']:,} tokens -> {data['tokens_added']:,}; "
        f"{data['dropped_total']:,} of {data['entities_seen']:,} entities"
        + (f" ({kinds})" if kinds else "")
    ]
    for entity in data.get("dropped", []):
        lines.append(f"- {entity['kind']} {entity['value']} (in {', '.join(entity['found_in'])})")
    if data.get("more_dropped"):
        lines.append(f"- … {data['more_dropped']:,} more")
    covered = data.get("covered_ids", [])
    if covered:
        more = data.get("covered_count", len(covered)) - len(covered)
        lines.append("covered: " + ", ".join(covered) + (f" … {more:,} more" if more > 0 else ""))
    if data.get("see"):
        lines.append(str(data["see"]))
    return lines
