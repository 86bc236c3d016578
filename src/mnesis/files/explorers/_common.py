"""Helpers every explorer shares: bounded summaries, bounded line reading, size limits.

Explorers read files in bounded memory: line by line (with a cap on the length of
one line) or in fixed-size chunks, never the whole of a file they did not check
the size of first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from mnesis.files.explorers._format import clip, fmt_int

__all__ = [
    "CHUNK_BYTES",
    "MAX_IMPORTS",
    "MAX_MEMBERS",
    "MAX_SUMMARY_CHARS",
    "PARSE_LIMIT_BYTES",
    "ExplorationError",
    "LineReader",
    "SummaryBuilder",
    "count_lines",
    "read_text",
]

CHUNK_BYTES = 1 << 20
"""Read size of every streamed pass."""

PARSE_LIMIT_BYTES = 20 * 1024 * 1024
"""Above this, explorers that need the whole text in memory (``ast``, ``tomllib``,
``yaml``) switch to a line scan."""

MAX_SUMMARY_CHARS = 6_000
"""Upper bound of an exploration summary (about 1,500-2,000 tokens)."""

LINE_SCAN_BYTES = 256 * 1024 * 1024
"""Line-based explorers stop after this many characters and say so."""


class ExplorationError(Exception):
    """The content could not be parsed as the detected type (the message says why)."""


class SummaryBuilder:
    """Collects summary lines and stops accepting them past a size budget."""

    def __init__(self, max_chars: int = MAX_SUMMARY_CHARS) -> None:
        self.lines: list[str] = []
        self.max_chars = max_chars
        self._chars = 0
        self.dropped = 0

    @property
    def full(self) -> bool:
        """True once the budget is used up; further lines are counted, not kept."""
        return self._chars >= self.max_chars

    def add(self, line: str, *, limit: int = 300) -> bool:
        """Append ``line`` (clipped to ``limit`` characters); False if the budget is used up."""
        if self.full:
            self.dropped += 1
            return False
        line = clip(line, limit)
        self.lines.append(line)
        self._chars += len(line) + 1
        return True

    def text(self) -> str:
        """The summary, with a note if lines were dropped."""
        lines = list(self.lines)
        if self.dropped:
            lines.append(f"… ({fmt_int(self.dropped)} more lines omitted)")
        return "\n".join(lines)


class LineReader:
    """Iterates over the lines of a text file in bounded memory.

    A line longer than ``max_line_chars`` is cut (the rest is skipped, not kept).
    Reading stops after ``budget_chars`` characters; ``truncated`` tells whether it did.
    Decoding is UTF-8 with replacement characters, a BOM is dropped.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_line_chars: int = 65_536,
        budget_chars: int = LINE_SCAN_BYTES,
    ) -> None:
        self._handle = open(path, encoding="utf-8-sig", errors="replace", newline=None)  # noqa: SIM115
        self.max_line_chars = max_line_chars
        self.budget_chars = budget_chars
        self.chars_read = 0
        self.line_count = 0
        self.truncated = False

    def __iter__(self) -> Iterator[str]:
        read = self._handle.readline
        limit = self.max_line_chars
        while True:
            if self.chars_read >= self.budget_chars:
                self.truncated = bool(read(1))
                return
            line = read(limit)
            if not line:
                return
            self.chars_read += len(line)
            if not line.endswith("\n"):
                rest = line
                while rest and not rest.endswith("\n"):
                    rest = read(limit)
                    self.chars_read += len(rest)
            self.line_count += 1
            yield line.rstrip("\r\n")

    def close(self) -> None:
        """Close the underlying file."""
        self._handle.close()

    def __enter__(self) -> LineReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_text(path: str | os.PathLike[str]) -> str:
    """The whole file as text (UTF-8, replacement characters, BOM dropped).

    Callers check the size against :data:`PARSE_LIMIT_BYTES` first.
    """
    return Path(path).read_bytes().decode("utf-8-sig", errors="replace")


def count_lines(path: str | os.PathLike[str]) -> int:
    """Number of lines, counted in binary chunks (a last line without newline counts)."""
    count = 0
    last = b""
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    if last and last != b"\n":
        count += 1
    return count


MAX_IMPORTS = 40
"""Imports a code outline lists before it says how many more there are."""

MAX_MEMBERS = 40
"""Members of one class (or exported names) a code outline lists."""
