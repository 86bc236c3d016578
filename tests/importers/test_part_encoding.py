"""``encode_part`` reads the common parts' fields directly instead of dumping them through
pydantic: the stored columns must be byte for byte what the dump gives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mnesis.importers.api import _lines, detect_format
from mnesis.importers.batches import BatchBuilder
from mnesis.importers.formats import FORMATS
from mnesis.importers.pipeline import Limits, cut_batches
from mnesis.models.parts import (
    AgentPart,
    FileRefPart,
    MessagePart,
    PatchPart,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.store.codec import dumps, encode_part, searchable_text
from mnesis.store.shared.part_text import shrink_content

SAMPLES = Path(__file__).parent / "samples"
Content = Callable[[dict[str, Any], str | None], str] | None


class _Source:
    state: ClassVar[dict[str, Any]] = {}
    byte_offset = 0
    lines = 0


def _sample_parts(path: Path) -> list[MessagePart]:
    fmt = detect_format(str(path))
    parser = FORMATS[fmt]()
    builder = BatchBuilder(label=parser.label, sessions={}, tails={})
    lines = _lines(str(path), fmt, _Source())  # type: ignore[arg-type]
    limits = Limits(messages=2, chars=1_000_000)
    return [
        part
        for batch in cut_batches(lines, parser, builder, limits, (0, 0))
        for item in batch.messages
        for part in item.parts
    ]


def _by_dump(part: MessagePart, content: Content) -> dict[str, Any]:
    """What ``encode_part`` gave when it dumped every part through pydantic."""
    data = part.model_dump(exclude={"id"})
    text = searchable_text(part)
    row = {
        "part_type": part.type,
        "content": dumps(data) if content is None else content(data, text),
        "text_content": text,
    }
    row.update(
        {
            key: getattr(part.status, key) if isinstance(part, ToolPart) else None
            for key in ("compacted_at", "started_at", "completed_at")
        }
    )
    return row


def _check(part: MessagePart) -> None:
    for content in (None, shrink_content):
        row = encode_part(part, content)
        expected = _by_dump(part, content)
        assert {key: row[key] for key in expected} == expected
        assert row["content"].encode("utf-8") == expected["content"].encode("utf-8")


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_file()))
def test_every_sample_part_encodes_as_its_dump(sample: str) -> None:
    parts = _sample_parts(SAMPLES / sample)
    assert parts
    for part in parts:
        _check(part)


HAND_MADE: list[MessagePart] = [
    TextPart(text="plain"),
    TextPart(text="a\x00b \ud800 lone, 漢字テキスト " * 3, synthetic=True, ignored=True),
    ReasoningPart(text="thinking it over, at some length"),
    ToolPart(
        tool_name="Bash",
        tool_call_id="toolu_1",
        input={"command": "ls", "n": 2**70, "f": 0.1, "nested": [{"a": None}, (1, 2)]},
        output="out " * 20,
        error_message="boom",
        title="listing",
        status=ToolStatus(state="error", compacted_at=5, started_at=1, completed_at=2),
    ),
    ToolPart(tool_name="Read", tool_call_id="toolu_2", status=ToolStatus(state="running")),
    FileRefPart(content_id="c1", path="/a/b.py", exploration_summary="summary " * 10),
    PatchPart(hash="abc", files=["x.py"]),
    AgentPart(name="default"),
]


@pytest.mark.parametrize("index", range(len(HAND_MADE)))
def test_a_hand_made_part_encodes_as_its_dump(index: int) -> None:
    _check(HAND_MADE[index])


@pytest.mark.parametrize("round_", range(2))
def test_the_json_of_a_shrunk_text_part_follows_its_flags(round_: int) -> None:
    """Each flag combination of a text part left without its text encodes as its dump,
    in any order."""
    flags = [(False, False), (True, False), (False, True), (True, True)]
    for synthetic, ignored in flags[round_:] + flags[:round_]:
        _check(TextPart(text="long enough to be left out", synthetic=synthetic, ignored=ignored))
