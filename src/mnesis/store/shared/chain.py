"""The per-session hash chain over stored history (``history_chain``, m011), the same on
both backends: what each link covers, how a writer extends the chain, how a reader
checks it.

Every message, part and summary written gets one link, in write order, numbered
1, 2, ... per session. A link's hash is ``BLAKE2b-256(previous hash || digest)``, where
``digest`` is ``BLAKE2b-256`` of the row's canonical content (:func:`digest`) and the
hash before link 1 is :func:`genesis` of the session ID. What each kind covers:

* ``message``: id, session_id, role, created_at, agent, model_id, provider_id,
  is_summary, parent_id, seq (not the token counts, cost, finish_reason or estimate,
  which the store lets change);
* ``part``: id, message_id, session_id, ordinal, part_type, tool_name, tool_call_id,
  created_at, content, text_content, tool_state (a part's whole stored text);
* ``part_open``: a tool part written while its call was still pending or running:
  the same without content, text_content and tool_state, which may still change;
  its ``result`` link covers them once the call settles;
* ``result``: a tool part's id, content, text_content and tool_state when it settles
  (``completed`` / ``error``);
* ``summary``: every column of the summary row, its source messages and parent
  summaries in lineage order.

Not covered: the context view (``context_items``, which compaction rewrites by
design), tool timing (started_at / completed_at), tombstones (``compacted_at``) and
token estimates. The digest covers the link's kind, so a link cannot be relabelled.

The digest is computed where the row is built (in an import's parser process, too);
only the chaining step, one hash of 64 bytes, runs in the write transaction, after
:data:`HEAD_SELECT` read the session's head under the same lock that assigns ``seq``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from mnesis.store.shared.sql import MESSAGE_COLUMNS

__all__ = [
    "CHAIN_DELETE",
    "HEAD_SELECT",
    "LINK_INSERT",
    "MESSAGE_FIELDS",
    "PART_FIELDS",
    "Link",
    "chain_links",
    "digest",
    "genesis",
    "link_hash",
    "message_link",
    "part_link",
    "result_link",
    "settled",
]

HEAD_SELECT = "SELECT link, hash FROM history_chain WHERE session_id = ? ORDER BY link DESC LIMIT 1"
"""A session's newest link and its hash (no row: an empty chain)."""

CHAIN_DELETE = "DELETE FROM history_chain WHERE session_id = ?"
"""A purged session's links (admitted only inside the purge's transaction)."""

LINK_INSERT = (
    "INSERT INTO history_chain (session_id, link, kind, row_id, hash, migrated) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)

# What a link covers must never change (a stored chain would stop verifying): the
# column lists below and the digests of fixed rows are pinned by
# tests/store/test_chain_format.py, so a change to the store's column lists that would
# move them fails there.
MESSAGE_FIELDS = (*MESSAGE_COLUMNS[:9], "seq")
"""The ``messages`` columns a ``message`` link covers, in digest order: those the store
never changes (id to parent_id, the first nine of ``MESSAGE_COLUMNS``, as
:func:`message_link` takes them from a row) and ``seq``."""

PART_FIELDS = (
    "id",
    "message_id",
    "session_id",
    "ordinal",
    "part_type",
    "tool_name",
    "tool_call_id",
    "created_at",
    "content",
    "text_content",
    "tool_state",
)
"""The ``message_parts`` columns a ``part`` link covers, in digest order (a
``part_open`` link the first eight)."""

_OPEN_STATES = ("pending", "running")
_SETTLED = ("completed", "error")

Link = tuple[str, str, str, bytes]
"""``(session_id, kind, row_id, digest)``: one row's link before it is chained."""


def _feed(update: Any, value: Any) -> None:
    """Feed one value, length-prefixed, to a hash's ``update``."""
    if value is None:
        update(b"n")
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        update(b"s%d:" % len(raw))
        update(raw)
    elif isinstance(value, bool | int):
        update(b"i%d;" % int(value))
    elif isinstance(value, bytes | bytearray | memoryview):
        update(b"s%d:" % len(value))
        update(value)
    elif isinstance(value, float):
        update(b"f" + repr(value).encode())
    elif isinstance(value, list | tuple):
        update(b"l%d:" % len(value))
        for item in value:
            _feed(update, item)
    else:
        raise TypeError(f"cannot hash a {type(value).__name__}")


def digest(kind: str, fields: Iterable[Any]) -> bytes:
    """BLAKE2b-256 of a row's canonical content: the kind, then each value
    length-prefixed (text as UTF-8, integers and booleans as decimal integers, NULL
    distinct from ``''``)."""
    h = hashlib.blake2b(digest_size=32)
    update = h.update
    _feed(update, kind)
    for value in fields:
        _feed(update, value)
    return h.digest()


def genesis(session_id: str) -> bytes:
    """The hash before a session's first link."""
    seed = b"mnesis-chain-v1\x00" + session_id.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(seed, digest_size=32).digest()


def link_hash(previous: bytes, row_digest: bytes) -> bytes:
    """The hash of a link whose predecessor's hash is ``previous``."""
    return hashlib.blake2b(previous + row_digest, digest_size=32).digest()


def message_link(row: Sequence[Any]) -> Link:
    """The link of a ``messages`` row as :func:`~mnesis.store.shared.rows.message_row`
    builds it."""
    fields = (*row[:7], int(row[7]), row[8], row[17])
    return (row[1], "message", row[0], digest("message", fields))


def part_link(row: Sequence[Any]) -> Link:
    """The link of a ``message_parts`` row as :func:`~mnesis.store.shared.rows.part_rows`
    builds it (``part_open`` for a tool call not yet settled)."""
    fixed = (*row[:5], row[7], row[8], row[14])
    if row[4] == "tool" and row[9] in _OPEN_STATES:
        return (row[2], "part_open", row[0], digest("part_open", fixed))
    return (row[2], "part", row[0], digest("part", (*fixed, row[5], row[6], row[9])))


def result_link(session_id: str, part_id: str, content: Any, text_content: Any, state: Any) -> Link:
    """The link of a tool part's settled result."""
    return (
        session_id,
        "result",
        part_id,
        digest("result", (part_id, content, text_content, state)),
    )


def chain_links(
    heads: dict[str, tuple[int, bytes]], links: Iterable[Link], *, migrated: bool = False
) -> list[tuple[Any, ...]]:
    """The :data:`LINK_INSERT` rows of ``links`` in order; ``heads`` holds each
    session's ``(last link, its hash)`` (a session not in it starts a new chain) and is
    advanced."""
    out: list[tuple[Any, ...]] = []
    for session_id, kind, row_id, row_digest in links:
        number, previous = heads.get(session_id) or (0, genesis(session_id))
        current = link_hash(previous, row_digest)
        heads[session_id] = (number + 1, current)
        out.append((session_id, number + 1, kind, row_id, current, int(migrated)))
    return out


def settled(old_state: Any, new_state: Any) -> bool:
    """Whether a status change settles a tool call (it then gets a ``result`` link)."""
    return old_state in _OPEN_STATES and new_state in _SETTLED


def summary_link(
    values: Sequence[Any],
    file_ids: list[Any],
    sources: Sequence[Sequence[Any]],
    parents: Sequence[Sequence[Any]],
) -> Link:
    """The link of a ``summaries`` row (the values of ``SUMMARY_INSERT``; ``file_ids``
    decoded) with its lineage rows (``(summary, source, ordinal)``, in order)."""
    fields = (
        *values[:7],
        file_ids,
        *values[8:13],
        [r[1] for r in sorted(sources, key=lambda r: r[2])],
        [r[1] for r in sorted(parents, key=lambda r: r[2])],
    )
    return (values[1], "summary", values[0], digest("summary", fields))


def commit_links(
    writes: Sequence[tuple[str, Sequence[Sequence[Any]]]], file_ids: list[Any]
) -> list[Link]:
    """The links of a compaction commit's writes (as
    :func:`~mnesis.store.shared.commit.commit_writes` orders them): the marker message,
    its parts, the summary with its lineage."""
    messages, parts, summaries, sources, parents = (rows for _sql, rows in writes[:5])
    out = [message_link(r) for r in messages] + [part_link(r) for r in parts]
    out += [summary_link(v, file_ids, sources, parents) for v in summaries]
    return out
