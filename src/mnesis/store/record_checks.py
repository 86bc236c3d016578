"""Checks of whole records and keyword sets the store facade receives (the checks of
single values are in :mod:`mnesis.store.checks`); every rejection of a value is an
:class:`~mnesis.errors.InvalidArgumentError`, raised before any backend code runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, Protocol

from mnesis.errors import InvalidArgumentError
from mnesis.store.checks import (
    check_choice,
    check_count,
    check_filter,
    check_id,
    check_ids,
    check_instance,
    check_message_update,
    check_new_message,
    check_optional_count,
    check_optional_id,
    check_optional_timestamp,
    check_parts,
    check_plain_text,
    check_row,
    check_sequence,
    check_summary,
)
from mnesis.store.records import (
    CompactionCommit,
    ContextItemsQuery,
    FileReference,
    ImportSource,
    MessageChange,
    MessagesQuery,
    PartsAppend,
    PartStatusChange,
    SessionRecord,
    TextScan,
    TextSearch,
)
from mnesis.store.search_query import SearchQuery

__all__ = [
    "check_commit",
    "check_context_query",
    "check_context_rows",
    "check_file_reference",
    "check_import_source",
    "check_message_change",
    "check_messages_query",
    "check_part_status",
    "check_parts_append",
    "check_session_record",
    "check_text_scan",
    "check_text_search",
    "check_tombstones",
]

_TOOL_STATES = ("pending", "running", "completed", "error")
_ITEM_TYPES = ("message", "summary")
SCOPES = ("messages", "summaries")


class _Keywords(Protocol):
    __required_keys__: ClassVar[frozenset[str]]
    __optional_keys__: ClassVar[frozenset[str]]


def check_keywords(given: Mapping[str, object], spec: type[_Keywords], call: str) -> None:
    """Raise :class:`TypeError`, as Python does for a declared signature, for a keyword
    ``call`` does not take (not in the TypedDict ``spec``) or a required one missing."""
    required, optional = spec.__required_keys__, spec.__optional_keys__
    for key in given:
        if key not in required and key not in optional:
            raise TypeError(f"{call}() got an unexpected keyword argument {key!r}")
    for key in sorted(required - given.keys()):
        raise TypeError(f"{call}() missing required keyword-only argument: {key!r}")


def check_session_record(record: object) -> None:
    """A session row to create."""
    check_instance(record, "record", SessionRecord)
    assert isinstance(record, SessionRecord)
    check_id(record.id, "session id")
    check_optional_id(record.parent_id, "parent_id")
    for name in ("model", "agent", "system_prompt"):
        check_plain_text(getattr(record, name), name)
    check_plain_text(record.title, "title", optional=True)
    check_choice(record.status, "status", ("active", "closed"))
    check_optional_timestamp(record.created_at, "created_at")
    check_optional_timestamp(record.updated_at, "updated_at")
    if record.config is not None:
        check_instance(record.config, "config", dict)


def _check_optional_choice(value: object, name: str, choices: Sequence[object]) -> None:
    if value is not None:
        check_choice(value, name, choices)


def check_part_status(part_id: object, change: PartStatusChange) -> None:
    """The arguments of ``update_part_status``."""
    check_keywords(change, PartStatusChange, "update_part_status")
    check_id(part_id, "part_id")
    _check_optional_choice(change.get("state"), "state", _TOOL_STATES)
    for name in ("compacted_at", "started_at", "completed_at"):
        check_optional_timestamp(change.get(name), name)
    for name in ("output", "error_message"):
        text = change.get(name)
        if text is not None:
            check_instance(text, name, str)
    check_optional_count(change.get("token_estimate"), "token_estimate")
    check_optional_count(change.get("message_token_estimate"), "message_token_estimate")


def check_tombstones(
    parts: Sequence[tuple[str, int, int]], message_estimates: Sequence[tuple[str, int]]
) -> None:
    """The arguments of ``tombstone_parts``."""
    for index, row in enumerate(check_sequence(parts, "parts")):
        part_id, at, tokens = check_row(row, f"parts[{index}]", 3)
        check_id(part_id, f"parts[{index}] part id")
        check_optional_timestamp(at, f"parts[{index}] compacted_at")
        check_count(tokens, f"parts[{index}] token estimate")
    for index, row in enumerate(check_sequence(message_estimates, "message_estimates")):
        message_id, tokens = check_row(row, f"message_estimates[{index}]", 2)
        check_id(message_id, f"message_estimates[{index}] message id")
        check_count(tokens, f"message_estimates[{index}] token estimate")


def check_parts_append(message_id: object, parts: object, options: PartsAppend) -> None:
    """The arguments of ``append_parts``."""
    check_keywords(options, PartsAppend, "append_parts")
    check_id(message_id, "message_id")
    check_parts(parts, options.get("part_tokens"), "parts")
    check_message_update(
        options.get("tokens"), None, options.get("finish_reason"), options.get("token_estimate")
    )


def check_message_change(message_id: object, change: MessageChange) -> None:
    """The arguments of ``update_message_tokens``."""
    check_keywords(change, MessageChange, "update_message_tokens")
    check_id(message_id, "message_id")
    check_message_update(
        change.get("tokens"),
        change.get("cost"),
        change.get("finish_reason"),
        change.get("token_estimate"),
    )


def check_messages_query(session_id: object, query: MessagesQuery) -> None:
    """The arguments of ``get_messages``."""
    check_keywords(query, MessagesQuery, "get_messages")
    check_id(session_id, "session_id")
    check_count(query.get("after_seq", 0), "after_seq")
    check_optional_count(query.get("limit"), "limit")


def check_context_query(session_id: object, query: ContextItemsQuery) -> None:
    """The arguments of ``get_context_items``."""
    check_keywords(query, ContextItemsQuery, "get_context_items")
    check_id(session_id, "session_id")
    _check_optional_choice(query.get("item_type"), "item_type", _ITEM_TYPES)
    check_optional_count(query.get("before_position"), "before_position")
    check_optional_count(query.get("limit"), "limit")


def check_commit(commit: object) -> None:
    """A compaction commit."""
    check_instance(commit, "commit", CompactionCommit)
    assert isinstance(commit, CompactionCommit)
    check_summary(commit.summary)
    check_ids(commit.source_message_ids, "source_message_ids")
    check_ids(commit.parent_summary_ids, "parent_summary_ids")
    if not check_sequence(commit.replaced, "replaced"):
        raise InvalidArgumentError("a compaction must replace at least one context item")
    for index, row in enumerate(commit.replaced):
        position, item_id = check_row(row, f"replaced[{index}]", 2)
        check_count(position, f"replaced[{index}] position")
        check_id(item_id, f"replaced[{index}] item id")
    check_count(commit.context_tokens, "context_tokens")
    check_new_message(commit.marker, "marker")
    if commit.marker.message.session_id != commit.summary.session_id:
        raise InvalidArgumentError("the compaction marker belongs to another session")


def check_text_search(search: TextSearch) -> None:
    """The keywords of ``search_text``."""
    check_keywords(search, TextSearch, "search_text")
    check_instance(search["query"], "query", SearchQuery)
    check_choice(search["scope"], "scope", SCOPES)
    check_filter(search["where"])
    check_count(search["limit"], "limit")
    check_count(search.get("offset", 0), "offset")


def check_text_scan(scan: TextScan) -> None:
    """The keywords of ``scan_text``."""
    check_keywords(scan, TextScan, "scan_text")
    check_choice(scan["scope"], "scope", SCOPES)
    check_filter(scan["where"])
    check_optional_count(scan["before_key"], "before_key")
    check_count(scan["limit"], "limit")


def check_context_rows(items: Sequence[tuple[str, str, int]]) -> None:
    """The ``(item_type, item_id, tokens)`` rows of ``replace_context_items``."""
    for index, row in enumerate(check_sequence(items, "items")):
        kind, item_id, tokens = check_row(row, f"items[{index}]", 3)
        check_choice(kind, f"items[{index}] item type", _ITEM_TYPES)
        check_id(item_id, f"items[{index}] item id")
        check_count(tokens, f"items[{index}] tokens")


def check_file_reference(ref: object) -> None:
    """A file reference to store."""
    check_instance(ref, "ref", FileReference)
    assert isinstance(ref, FileReference)
    check_id(ref.content_id, "content_id")
    check_id(ref.file_id, "file_id")
    check_plain_text(ref.path, "path")
    check_plain_text(ref.file_type, "file_type")
    check_count(ref.token_count, "token_count")
    check_optional_count(ref.byte_size, "byte_size")
    check_optional_id(ref.session_id, "session_id")
    check_instance(ref.exploration_summary, "exploration_summary", str)


def check_import_source(source: object) -> None:
    """An import's progress record."""
    check_instance(source, "source", ImportSource)
    assert isinstance(source, ImportSource)
    for name in ("source_key", "format", "path", "session_id"):
        check_id(getattr(source, name), name)
    for name in ("byte_offset", "lines", "messages"):
        check_count(getattr(source, name), name)
    check_instance(source.state, "state", dict)
