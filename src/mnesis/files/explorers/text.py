"""Explorers of prose and of anything else: the Markdown heading tree, and the
fallback (line count and the first lines, or a hex preview of binary data)."""

from __future__ import annotations

import re
from pathlib import Path

from mnesis.files.explorers._common import LineReader, SummaryBuilder, count_lines
from mnesis.files.explorers._format import clip, fmt_bytes, fmt_int, plural

__all__ = ["explore_markdown", "fallback_summary"]

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MAX_HEADINGS = 150
_PREVIEW_LINES = 5


def explore_markdown(path: Path, size: int) -> str:
    """The heading tree (ATX and setext headings outside code blocks) and a few counts."""
    headings: list[tuple[int, str, int]] = []
    fence: str | None = None
    code_blocks = 0
    previous = ""
    in_front_matter = False
    with LineReader(path) as reader:
        for line in reader:
            number = reader.line_count
            if number == 1 and line.strip() == "---":
                in_front_matter = True
                continue
            if in_front_matter:
                in_front_matter = line.strip() not in ("---", "...")
                continue
            if fence is not None:
                if line.strip().startswith(fence):
                    fence = None
                continue
            if match := _FENCE.match(line):
                fence = match.group(1)[0] * 3
                code_blocks += 1
                previous = ""
                continue
            if match := _ATX.match(line):
                headings.append((len(match.group(1)), (match.group(2) or "").strip(), number))
                previous = ""
                continue
            setext = _SETEXT.match(line)
            if setext and previous.strip() and not previous.lstrip().startswith(("-", "*", ">")):
                level = 1 if setext.group(1)[0] == "=" else 2
                headings.append((level, previous.strip(), number - 1))
                previous = ""
                continue
            previous = line
        lines, truncated = reader.line_count, reader.truncated
    out = SummaryBuilder()
    note = " (scan stopped early)" if truncated else ""
    out.add(
        f"Markdown document: {plural(lines, 'line')}{note}, {plural(len(headings), 'heading')}, "
        f"{plural(code_blocks, 'code block')}"
    )
    if headings:
        out.add("Outline:")
        top = min(level for level, _, _ in headings)
        for level, title, number in headings[:_MAX_HEADINGS]:
            indent = "  " * (level - top + 1)
            if not out.add(f"{indent}{'#' * level} {clip(title, 120)}  (line {fmt_int(number)})"):
                break
        if len(headings) > _MAX_HEADINGS:
            out.add(f"  … {fmt_int(len(headings) - _MAX_HEADINGS)} more headings")
    return out.text()


def fallback_summary(path: Path, size: int, *, is_binary: bool) -> str:
    """Line count and the first five lines; for binary data, its size and first bytes."""
    if is_binary:
        with open(path, "rb") as handle:
            head = handle.read(32)
        return (
            f"Binary data: {fmt_bytes(size)} ({fmt_int(size)} bytes). "
            f"First {len(head)} bytes: {head.hex(' ')}"
        )
    out = SummaryBuilder()
    preview: list[str] = []
    with LineReader(path, max_line_chars=4096) as reader:
        for line in reader:
            preview.append(line)
            if len(preview) >= _PREVIEW_LINES:
                break
    out.add(f"{plural(count_lines(path), 'line')} ({fmt_bytes(size)}). First lines:")
    for number, line in enumerate(preview, start=1):
        out.add(f"  {number}| {clip(line, 200)}")
    return out.text()
