"""The ``content`` JSON of a part: minimal for new rows, older forms still decoded, and a
JSON that disagrees with its row's ``part_type`` or ``text_content`` is corruption."""

from __future__ import annotations

import json

import pytest

from mnesis.errors import StoreCorruptError
from mnesis.models.parts import (
    CompactionPart,
    FileRefPart,
    MessagePart,
    ReasoningPart,
    StepFinishPart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.store.codec import dumps, encode_part
from mnesis.store.shared.part_text import decode_stored_part, shrink_content

_PARTS: list[MessagePart] = [
    TextPart(text="a plain reply of a few words"),
    TextPart(text="x", synthetic=True),
    TextPart(text="a\x00b"),
    TextPart(text="中文文本"),
    TextPart(text=""),
    ReasoningPart(text="thinking it over"),
    ToolPart(
        tool_name="read",
        tool_call_id="c1",
        input={"type": "file", "path": "a.py"},
        output="the whole output of the tool",
        status=ToolStatus(state="completed", started_at=5, completed_at=9),
    ),
    ToolPart(tool_name="bash", tool_call_id="c2", status=ToolStatus(state="pending")),
    FileRefPart(content_id="h", path="src/a.py", exploration_summary="a module of things"),
    CompactionPart(summary_id="sum_1", level=2, auto=False),
    StepFinishPart(cost=-0.0),
]


def _decode(columns: dict[str, object], content: str | None = None) -> MessagePart:
    return decode_stored_part(
        "part_1",
        str(columns["part_type"]),
        str(columns["content"]) if content is None else content,
        columns["text_content"],  # type: ignore[arg-type]
        columns["tool_state"],  # type: ignore[arg-type]
        columns["compacted_at"],  # type: ignore[arg-type]
        columns["started_at"],  # type: ignore[arg-type]
        columns["completed_at"],  # type: ignore[arg-type]
    )


def _same(part: MessagePart, decoded: MessagePart) -> None:
    assert decoded.model_dump(exclude={"id"}) == part.model_dump(exclude={"id"})
    assert json.dumps(decoded.model_dump(exclude={"id"})) == json.dumps(
        part.model_dump(exclude={"id"})
    )


def test_a_plain_text_part_is_stored_as_an_empty_object() -> None:
    columns = encode_part(TextPart(text="hello there, a plain reply"), shrink_content)
    assert columns["content"] == "{}"
    assert encode_part(ReasoningPart(text="hmm"), shrink_content)["content"] == "{}"
    assert json.loads(
        encode_part(TextPart(text="hi", ignored=True), shrink_content)["content"]
    ) == {"ignored": True}


@pytest.mark.parametrize("part", _PARTS, ids=lambda p: p.type)
def test_the_minimal_json_leaves_out_type_status_and_defaults_and_decodes_the_same(
    part: MessagePart,
) -> None:
    columns = encode_part(part, shrink_content)
    data = json.loads(str(columns["content"]))
    assert "type" not in data and "status" not in data
    for key, value in data.items():  # no field holds its scalar default (floats kept: -0.0)
        info = type(part).model_fields.get(key)
        assert (
            info is None
            or info.is_required()
            or isinstance(value, float | dict)
            or value != info.default
        )
    _same(part, _decode(columns))


@pytest.mark.parametrize("part", _PARTS, ids=lambda p: p.type)
def test_rows_written_before_decode_unchanged(part: MessagePart) -> None:
    columns = encode_part(part, shrink_content)
    full = encode_part(part)["content"]  # before m005: the whole dump
    assert json.loads(str(full))["type"] == part.type
    _same(part, _decode(columns, str(full)))
    data = part.model_dump(exclude={"id"})
    field = {"text": "text", "reasoning": "text", "file_ref": "exploration_summary"}.get(part.type)
    if field and data[field] and data[field] == columns["text_content"]:
        marked = {k: v for k, v in data.items() if k != field} | {"@text": field}
        _same(part, _decode(columns, dumps(marked)))  # m005 to m009: type and marker


def test_a_json_that_disagrees_with_its_row_is_corruption() -> None:
    text = encode_part(TextPart(text="a plain reply"), shrink_content)
    with pytest.raises(StoreCorruptError, match="empty text_content"):
        _decode(text | {"text_content": None})
    full = encode_part(TextPart(text="a plain reply"))
    with pytest.raises(StoreCorruptError, match="column part_type 'reasoning'"):
        _decode(full | {"part_type": "reasoning"})
    with pytest.raises(StoreCorruptError, match="not a message part"):
        _decode(text | {"part_type": "tool"})
    with pytest.raises(StoreCorruptError, match="does not decode"):
        _decode(text, "{")


STORED_DEFAULTS = {
    "agent": {},
    # level (required before 0.4.0's names, issue 31: old rows always hold it) and
    # compacted_token_count and ledger (new; a marker written before the loss ledger has
    # none) default here
    "compaction": {
        "level": 1,
        "auto": True,
        "compacted_message_count": 0,
        "compacted_token_count": 0,
        "ledger": None,
    },
    "file": {"filename": None},
    "file_ref": {
        "exploration_summary": "",
        "file_id": None,
        "file_type": "unknown",
        "token_count": 0,
    },
    "patch": {"hash": "", "unified_diff": "", "additions": 0, "deletions": 0},  # issue 31
    "reasoning": {"wire": None},
    "retry": {"attempt": 1},
    "snapshot": {},
    "step_finish": {"reason": "stop", "step_index": 0, "snapshot_ref": None, "tokens_used": None},
    "step_start": {"snapshot": None, "step_index": 0},
    "subtask": {"agent": "default", "description": ""},
    "text": {"ignored": False, "synthetic": False, "wire": None},
    "tool": {"error_message": None, "output": None, "title": None, "wire": None},
}


def test_the_defaults_minimal_rows_rely_on_are_pinned() -> None:
    """A minimal row leaves out fields equal to their model default, so the defaults are
    part of the stored format: changing one would change what every such row already
    stored decodes to. Keep the old default for decoding (or migrate) before editing
    this table."""
    from mnesis.store.shared import part_text

    assert part_text._DEFAULTS == STORED_DEFAULTS
