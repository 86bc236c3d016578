"""Claude Code lines left undecoded (``progress``, snapshots, queue operations) are
exactly the lines the parser makes nothing of, and a line still being written is never
skipped past."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks._real_session import realistic_lines

from mnesis.importers.claude_code import ClaudeCodeParser, skip_line
from mnesis.importers.reader import SKIPPED, read_jsonl

CORPUS = Path(__file__).parent / "samples" / "corpus" / "claude-code"


def _raw_lines() -> list[bytes]:
    paths = sorted(CORPUS.rglob("*.jsonl"))
    lines = [raw for path in paths for raw in path.read_bytes().splitlines()]
    lines += [text.encode() for text in realistic_lines(30, pool=4)]
    tricky = [
        {"type": "user", "message": {"role": "user", "content": '"type":"progress"'}},
        {"data": {"type": "progress"}, "type": "user", "message": {"role": "user", "content": "x"}},
        {"tags": ["a"], "type": "progress"},
        {"type": "progressive", "message": {"role": "user", "content": "y"}},
    ]
    lines += [json.dumps(r, separators=(",", ":")).encode() for r in tricky]
    return [raw for raw in lines if raw.strip()]


def test_a_skipped_line_is_one_the_parser_makes_nothing_of() -> None:
    skipped = 0
    for raw in _raw_lines():
        if skip_line(raw + b"\n"):
            skipped += 1
            assert ClaudeCodeParser().parse(json.loads(raw)) == [], raw[:80]
    assert skipped >= 80  # the generated session's progress records, at least


def test_only_the_records_own_type_counts() -> None:
    assert skip_line(b'{"parentUuid":null,"type":"progress","data":{"x":1}}\n')
    assert not skip_line(b'{"parentUuid":null,"data":{"type":"progress"},"type":"user"}\n')
    assert not skip_line(b'{"a":["{"],"type":"progress"}\n')


def test_a_last_line_without_its_newline_is_not_skipped_past(tmp_path: Path) -> None:
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b'{"type":"progress","data":{}}\n{"type":"progress","data":{"out')
    lines = list(read_jsonl(str(path), skip=skip_line))
    assert [(line.value is SKIPPED, line.end_offset) for line in lines] == [(True, 30)]
