"""The fault catalogue: one entry per way to break an invariant, shared by the checker
and repair tests.

Each :class:`Fault` writes bad rows into a compacted session (inside :func:`tampering`)
and names the violation kinds the checker must report for it: exactly those.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from mnesis.integrity import ViolationKind
from mnesis.integrity.report import REPAIRABLE
from mnesis.models.ids import new_id
from tests.integrity.tampering import (
    add_lineage,
    append_tool_message,
    context_of,
    covered_messages,
    dangling_message_key,
    insert_summary,
    raw_messages,
    rewrite_context,
    summaries_in_context,
)

__all__ = [
    "FAULTS",
    "LINEAGE_TRIGGERS",
    "Fault",
    "Inject",
    "inflated_token_estimate",
    "last_message_dropped",
    "lineage_deleted",
    "two_messages_swapped",
    "two_summaries_merging_each_other",
    "undecodable_part",
]

Inject = Callable[[sqlite3.Connection, str], tuple[str, ...]]
"""Writes a fault into a session; returns the IDs a violation may name."""

LINEAGE_TRIGGERS = ("summary_messages_no_delete", "summary_parents_no_delete")


def _insert_after(items: list[tuple[str, str]], anchor: str, item: tuple[str, str]) -> None:
    index = next(i for i, (_, item_id) in enumerate(items) if item_id == anchor)
    items.insert(index + 1, item)


def _condensed_in_context(conn: sqlite3.Connection, session_id: str) -> tuple[str, str]:
    """A condensed summary of the context and the first summary it merges."""
    for summary_id in summaries_in_context(conn, session_id):
        child = conn.execute(
            "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? "
            "ORDER BY ordinal LIMIT 1",
            (summary_id,),
        ).fetchone()
        if child is not None:
            return summary_id, child[0]
    raise AssertionError("the template has no condensed summary in its context")


def orphan_summary(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    first, second = raw_messages(conn, sid)[:2]
    return (insert_summary(conn, sid, span=(first, second)),)


def lineage_deleted(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    target = summaries_in_context(conn, sid)[0]
    conn.execute("DELETE FROM summary_messages WHERE summary_id = ?", (target,))
    conn.execute("DELETE FROM summary_parents WHERE summary_id = ?", (target,))
    return (target,)


def dangling(kind: str) -> Inject:
    def inject(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
        if kind == "message":
            return (dangling_message_key(conn, sid),)
        missing = new_id("sum")
        rewrite_context(conn, sid, [*context_of(conn, sid), (kind, missing)])
        return (missing,)

    return inject


def two_messages_swapped(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    items = context_of(conn, sid)
    assert items[-1][0] == items[-2][0] == "message"
    items[-2], items[-1] = items[-1], items[-2]
    rewrite_context(conn, sid, items)
    return (items[-1][1],)


def last_item_twice(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    items = context_of(conn, sid)
    rewrite_context(conn, sid, [*items, items[-1]])
    return (items[-1][1],)


def raw_and_summarised(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    items = context_of(conn, sid)
    summary_id = summaries_in_context(conn, sid)[0]
    first = covered_messages(conn, summary_id)[0]
    _insert_after(items, summary_id, ("message", first))
    rewrite_context(conn, sid, items)
    return (first, summary_id)


def summary_with_its_source(source_first: bool) -> Inject:
    def inject(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
        condensed, child = _condensed_in_context(conn, sid)
        items = context_of(conn, sid)
        _insert_after(items, condensed, ("summary", child))
        if source_first:
            index = items.index(("summary", condensed))
            items[index], items[index + 1] = items[index + 1], items[index]
        rewrite_context(conn, sid, items)
        return (condensed, child)

    return inject


def message_under_two_summaries(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    summary_id = summaries_in_context(conn, sid)[-1]
    last = covered_messages(conn, summary_id)[-1]
    overlapping = insert_summary(conn, sid, sources=[last])
    items = context_of(conn, sid)
    _insert_after(items, summary_id, ("summary", overlapping))
    rewrite_context(conn, sid, items)
    return (last, summary_id, overlapping)


def last_message_dropped(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    items = context_of(conn, sid)
    assert items[-1][0] == "message"
    rewrite_context(conn, sid, items[:-1])
    return (items[-1][1],)


def two_summaries_merging_each_other(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    first, second = raw_messages(conn, sid)[:2]
    one = insert_summary(conn, sid, sources=[first])
    two = insert_summary(conn, sid, sources=[second], merges=[one])
    add_lineage(conn, one, merges=[two])
    return (one, two)


def tool_result_after_a_summary(*, call_summarised: bool) -> Inject:
    """A tool result right after a summary: the raw tail of the context goes under a new
    summary, the calling message (the last of the tail) with it or, if not
    ``call_summarised``, dropped from the view altogether."""

    def inject(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
        items = context_of(conn, sid)
        cut = max(i for i, (kind, _) in enumerate(items) if kind == "summary") + 1
        tail = [item_id for _, item_id in items[cut:]]
        tool = append_tool_message(conn, sid, in_context=False)
        covering = insert_summary(conn, sid, sources=tail if call_summarised else tail[:-1])
        rewrite_context(conn, sid, [*items[:cut], ("summary", covering), ("message", tool)])
        return (tool,) if call_summarised else (tool, tail[-1])

    return inject


def inflated_token_estimate(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    target = context_of(conn, sid)[-1][1]
    conn.execute(
        "UPDATE messages SET token_estimate = token_estimate * 10 + 1000 WHERE id = ?", (target,)
    )
    return (target,)


def unknown_file_id_in_a_summary(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    summary_id = summaries_in_context(conn, sid)[0]
    (file_ids,) = conn.execute(
        "SELECT file_ids FROM summaries WHERE id = ?", (summary_id,)
    ).fetchone()
    conn.execute(
        "UPDATE summaries SET file_ids = ? WHERE id = ?",
        (json.dumps([*json.loads(file_ids), new_id("file")]), summary_id),
    )
    return (summary_id,)


def undecodable_part(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    """The JSON of the newest message's first part cut short, as a flipped bit would."""
    (message_id,) = conn.execute(
        "SELECT id FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (sid,)
    ).fetchone()
    conn.execute(
        "UPDATE message_parts SET content = substr(content, 1, 9) "
        "WHERE id = (SELECT MIN(id) FROM message_parts WHERE message_id = ?)",
        (message_id,),
    )
    return (message_id,)


def part_of_another_type(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    """The type column of the newest message's first part changed (a minimal JSON takes
    its type from that column; a full one must agree with it)."""
    (message_id,) = conn.execute(
        "SELECT id FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (sid,)
    ).fetchone()
    conn.execute(
        "UPDATE message_parts SET part_type = CASE part_type WHEN 'tool' THEN 'text' "
        "ELSE 'tool' END WHERE id = (SELECT MIN(id) FROM message_parts WHERE message_id = ?)",
        (message_id,),
    )
    return (message_id,)


def drifted_usage_sums(conn: sqlite3.Connection, sid: str) -> tuple[str, ...]:
    """The session's kept usage sums (m015) off by 7 input tokens from its messages."""
    conn.execute(
        "INSERT OR REPLACE INTO session_usage (session_id, upto_seq, sum_input, sum_output, "
        "sum_cache_read, sum_cache_write, sum_total) SELECT session_id, MAX(seq), "
        "SUM(tokens_input) + 7, SUM(tokens_output), SUM(tokens_cache_read), "
        "SUM(tokens_cache_write), SUM(tokens_total) FROM messages WHERE session_id = ?",
        (sid,),
    )
    return (sid,)


@dataclass(frozen=True, slots=True)
class Fault:
    """A way to break an invariant and the violation kinds the checker must report."""

    name: str
    inject: Inject
    kinds: frozenset[ViolationKind]
    drop_triggers: tuple[str, ...] = ()
    """Append-only triggers :func:`tampering` must drop to write the fault."""
    check_tokens: bool = False
    """The checker sees the fault only when it compares token estimates."""
    deep: bool = False
    """The checker sees the fault only when it decodes every row (``deep``)."""

    @property
    def repairable(self) -> bool:
        """Every kind the fault produces can be repaired."""
        return self.kinds <= REPAIRABLE


K = ViolationKind
FAULTS = [
    Fault("a summary with no source", orphan_summary, frozenset({K.SUMMARY_WITHOUT_SOURCE})),
    Fault(
        "the lineage rows of a summary in context deleted",
        lineage_deleted,
        frozenset({K.SUMMARY_WITHOUT_SOURCE, K.LOST_FROM_VIEW}),
        drop_triggers=LINEAGE_TRIGGERS,
    ),
    Fault(
        "a context item naming no message",
        dangling("message"),
        frozenset({K.DANGLING_CONTEXT_ITEM}),
    ),
    Fault(
        "a context item naming no summary",
        dangling("summary"),
        frozenset({K.DANGLING_CONTEXT_ITEM}),
    ),
    Fault(
        "two context messages swapped", two_messages_swapped, frozenset({K.CONTEXT_OUT_OF_ORDER})
    ),
    Fault("a context item twice", last_item_twice, frozenset({K.DUPLICATE_CONTEXT_ITEM})),
    Fault("a message both raw and summarised", raw_and_summarised, frozenset({K.DOUBLE_COUNTED})),
    Fault(
        "a summary followed by one of its sources",
        summary_with_its_source(source_first=False),
        frozenset({K.DOUBLE_COUNTED}),
    ),
    Fault(
        "a summary preceded by one of its sources",
        summary_with_its_source(source_first=True),
        frozenset({K.DOUBLE_COUNTED}),
    ),
    Fault(
        "a message under two summaries in context",
        message_under_two_summaries,
        frozenset({K.DOUBLE_COUNTED}),
    ),
    Fault(
        "a message dropped from the context", last_message_dropped, frozenset({K.LOST_FROM_VIEW})
    ),
    Fault(
        "two summaries merging each other",
        two_summaries_merging_each_other,
        frozenset({K.DAG_CYCLE}),
    ),
    Fault(
        "a tool result whose call is under a summary",
        tool_result_after_a_summary(call_summarised=True),
        frozenset({K.SEPARATED_TOOL_RESULT}),
    ),
    Fault(
        "a tool result whose calling message was dropped",
        tool_result_after_a_summary(call_summarised=False),
        frozenset({K.SEPARATED_TOOL_RESULT, K.LOST_FROM_VIEW}),
    ),
    Fault(
        "a stored token estimate ten times too large",
        inflated_token_estimate,
        frozenset({K.TOKEN_MISMATCH}),
        check_tokens=True,
    ),
    Fault(
        "a summary naming a file ID with no file reference",
        unknown_file_id_in_a_summary,
        frozenset({K.MISSING_FILE_REFERENCE}),
        drop_triggers=("summaries_no_update",),
    ),
    Fault(
        "a part's stored JSON cut short",
        undecodable_part,
        frozenset({K.UNDECODABLE_ROW, K.CHAIN_BROKEN}),
        drop_triggers=("message_parts_immutable",),
        deep=True,
    ),
    Fault(
        "a part's type column changed",
        part_of_another_type,
        frozenset({K.UNDECODABLE_ROW, K.CHAIN_BROKEN}),
        drop_triggers=("message_parts_immutable",),
        deep=True,
    ),
    Fault(
        "a session's kept usage sums off from its messages",
        drifted_usage_sums,
        frozenset({K.USAGE_MISMATCH}),
        deep=True,
    ),
]
"""Every fault, each kind of violation produced by at least one."""
