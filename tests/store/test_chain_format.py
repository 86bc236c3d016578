"""The hash chain's format, pinned: the columns each link covers, in digest order, and
the digests of fixed rows.

A database written by an earlier version must still verify, so a link's hash must not
change when the schema grows or a column list is reordered: any change to what a link
covers (or to how it is hashed) has to fail here, loudly, rather than turn every stored
chain into a reported break. The expected values below are the format's (computed
when this test was written, from rows every version writes alike) and must never be
edited to make a change pass.
"""

from __future__ import annotations

from mnesis.models.message import Message
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.store.shared.chain import (
    genesis,
    link_hash,
    message_link,
    part_link,
    result_link,
    summary_link,
)
from mnesis.store.shared.chain_check import chain_reads, session_links
from mnesis.store.shared.rows import encode_parts, message_row, part_rows

_MESSAGE_DIGEST = "e544cc227ef0c7bd39529f2cab7210b3c012358f708bd9073d31de2063e02de6"
_SUMMARY_DIGEST = "623587c1df88543fd4190cde4048f251cec823ff03e3c7cd4913a0d8bac77151"
_SUMMARY_VALUES = (
    "sum_1",
    "ses_1",
    "leaf",
    0,
    1,
    "text",
    9,
    '["f1"]',
    "msg_2",
    "msg_1",
    "msg_1",
    1,
    1_700_000_000_002,
)


def test_the_check_reads_exactly_the_columns_each_link_covers_in_digest_order() -> None:
    assert chain_reads(lambda column: f"RAW({column})") == [
        "SELECT link, RAW(kind), RAW(row_id), hash, migrated FROM history_chain "
        "WHERE session_id = ? ORDER BY link",
        "SELECT RAW(id), RAW(session_id), RAW(role), created_at, RAW(agent), RAW(model_id), "
        "RAW(provider_id), is_summary, RAW(parent_id), seq FROM messages WHERE session_id = ?",
        "SELECT RAW(id), RAW(message_id), RAW(session_id), ordinal, RAW(part_type), "
        "RAW(tool_name), RAW(tool_call_id), created_at, RAW(content), RAW(text_content), "
        "RAW(tool_state) FROM message_parts WHERE session_id = ?",
        "SELECT RAW(id), RAW(session_id), RAW(kind), depth, level, RAW(content), token_count, "
        "RAW(file_ids), RAW(message_id), RAW(span_start_message_id), "
        "RAW(span_end_message_id), source_message_count, created_at "
        "FROM summaries WHERE session_id = ?",
        "SELECT RAW(summary_id), RAW(message_id), ordinal FROM summary_messages "
        "WHERE summary_id IN (SELECT id FROM summaries WHERE session_id = ?)",
        "SELECT RAW(summary_id), RAW(parent_summary_id), ordinal FROM summary_parents "
        "WHERE summary_id IN (SELECT id FROM summaries WHERE session_id = ?)",
    ]


def test_the_writer_hashes_fixed_rows_to_the_same_digests_as_ever() -> None:
    message = Message(
        id="msg_1",
        session_id="ses_1",
        role="assistant",
        created_at=1_700_000_000_000,
        agent="a",
        model_id="m",
        provider_id="p",
        parent_id="msg_0",
        tokens=TokenUsage(input=5, output=7),
        cost=0.5,
        finish_reason="stop",
        token_estimate=12,
    )
    parts = [
        TextPart(id="prt_1", text="héllo"),
        ToolPart(
            id="prt_2",
            tool_name="grep",
            tool_call_id="call_1",
            input={"q": "x"},
            status=ToolStatus(state="running"),
        ),
    ]
    links = [message_link(message_row(message, 3, False))]
    links += [
        part_link(r)
        for r in part_rows("msg_1", "ses_1", 0, encode_parts(parts, [3, 4]), 1_700_000_000_001)
    ]
    links.append(result_link("ses_1", "prt_2", '{"output":"ok"}', "ok", "completed"))
    values = (*_SUMMARY_VALUES, "search text")
    links.append(summary_link(values, ["f1"], [("sum_1", "msg_1", 0)], []))

    assert [(s, kind, row_id, d.hex()) for s, kind, row_id, d in links] == [
        ("ses_1", "message", "msg_1", _MESSAGE_DIGEST),
        (
            "ses_1",
            "part",
            "prt_1",
            "1c8cf882bab9cbb94e46f628420386cd493ab581fa007054e508827f98cf27f2",
        ),
        (
            "ses_1",
            "part_open",
            "prt_2",
            "f19271b35f3a82d7bd2821f8ec5b3821c1cbf7cdf23c16e143afea18e8350efd",
        ),
        (
            "ses_1",
            "result",
            "prt_2",
            "4842df14d09aba935839dd5212de5c2bec78720df107fc07a47cabbed54377f4",
        ),
        ("ses_1", "summary", "sum_1", _SUMMARY_DIGEST),
    ]
    assert genesis("ses_1").hex() == (
        "9c4c9e0bf99151f456ebb68a4a1f0125e4ae0ecd9131ddac5ca9915e96edd029"
    )
    assert link_hash(genesis("ses_1"), links[0][3]).hex() == (
        "06c31ae8cba3bd49b5b2966d577d9a61988cb12f6e4ae2cc2f0962ed79a2ff05"
    )


def test_the_check_hashes_the_rows_as_read_to_the_same_digests() -> None:
    message_read = ("msg_1", "ses_1", "assistant", 1_700_000_000_000, "a", "m", "p", 0, "msg_0", 3)
    summary_read = (*_SUMMARY_VALUES[:7], b'["f1"]', *_SUMMARY_VALUES[8:])
    rows = ([], [message_read], [], [summary_read], [(b"sum_1", b"msg_1", 0)], [])

    links = session_links("ses_1", rows)

    assert [(kind, row_id, d.hex()) for _s, kind, row_id, d in links] == [
        ("message", "msg_1", _MESSAGE_DIGEST),
        ("summary", "sum_1", _SUMMARY_DIGEST),
    ]
