"""The JSON stream walker behind :func:`~mnesis.files.explorers.data.explore_json`.

Containers near the top (the first :data:`_STREAM_DEPTH` levels) are walked element by
element, anything below is parsed whole with the C decoder, so memory stays bounded by
the largest single nested value (at most :data:`MAX_VALUE_CHARS`) whatever the file size.
"""

from __future__ import annotations

import codecs
import json
import json.scanner
import re
from typing import Any, BinaryIO

from mnesis.files.explorers._common import CHUNK_BYTES, ExplorationError
from mnesis.files.explorers._format import fmt_bytes, fmt_int
from mnesis.files.explorers._shape import MAX_FIELDS, SAMPLE_ELEMENTS, Shape

__all__ = ["MAX_VALUE_CHARS", "BudgetExhausted", "JsonStream"]

_STREAM_DEPTH = 3
_INLINE_VALUE_CHARS = 1 << 20
"""A container that fits in this many characters is parsed whole (fast), not walked."""
MAX_VALUE_CHARS = 16 << 20
"""The largest single value parsed whole (below the streamed levels)."""
_WS = re.compile(r"[ \t\n\r]*")


class BudgetExhausted(Exception):
    """The scan read its byte budget; what was seen so far is kept."""


class _TooLarge(Exception):
    """A value does not fit the parse-whole limit; walk it instead."""


class JsonStream:
    """A window over a JSON file: whitespace skipping and whole-value parsing with refills."""

    def __init__(self, handle: BinaryIO, budget: int) -> None:
        self._handle = handle
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._budget = budget
        decoder = json.JSONDecoder()
        self._raw = decoder.raw_decode
        # The C scanner behind raw_decode, called without its wrapper (faster per item).
        self._scan_once = json.scanner.make_scanner(decoder)  # type: ignore[arg-type]
        self.bytes_read = 0

    def _fill(self) -> None:
        if self.bytes_read >= self._budget:
            raise BudgetExhausted
        chunk = self._handle.read(CHUNK_BYTES)
        self.bytes_read += len(chunk)
        if chunk:
            text = self._decoder.decode(chunk)
        else:
            self._eof = True
            text = self._decoder.decode(b"", final=True)
        # Drop what was consumed so the window never holds more than one unfinished value.
        self._buf = self._buf[self._pos :] + text
        self._pos = 0

    def where(self, index: int | None = None) -> str:
        """Where the scan is (or window ``index``), for messages: ``"near byte 1,234"``."""
        behind = len(self._buf) - (self._pos if index is None else index)
        return f"near byte {fmt_int(max(0, self.bytes_read - behind))}"

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end of the file)."""
        while True:
            match = _WS.match(self._buf, self._pos)
            self._pos = match.end() if match else self._pos
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if self._eof:
                return ""
            self._fill()

    def expect(self, char: str) -> None:
        """Consume ``char`` or raise :class:`ExplorationError`."""
        found = self.peek()
        if found != char:
            shown = repr(found) if found else "the end of the file"
            raise ExplorationError(f"expected {char!r} but found {shown} {self.where()}")
        self._pos += 1

    def value(self, limit: int, *, peeked: bool = False) -> Any:
        """Parse the complete value at the current position (at most ``limit`` characters)."""
        if not peeked:
            self.peek()
        while True:
            try:
                obj, end = self._raw(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                # Near the end of the window the value may just be cut off: read on.
                cut_off = exc.pos >= len(self._buf) - 64 or exc.msg.startswith("Unterminated")
                if self._eof or not cut_off:
                    raise ExplorationError(f"{exc.msg} {self.where(exc.pos)}") from None
            else:
                # A number that ends exactly at the window's end may continue in the file.
                if end < len(self._buf) or self._eof:
                    self._pos = end
                    return obj
            if len(self._buf) - self._pos >= limit:
                raise _TooLarge
            self._fill()

    def _skip_run(self, *, keyed: bool) -> tuple[int, bool]:
        """Consume complete array elements (``keyed``: object members) found in the window.

        Returns ``(how many, whether it stopped right after one)``; if not, it stopped
        at the start of one it cannot decide from the window alone (the window ends,
        the item is malformed or is a closing bracket) and leaves it to :meth:`walk`.
        """
        if self.peek() == "":
            return 0, False
        buf, pos, raw, space = self._buf, self._pos, self._scan_once, _WS.match
        size = len(buf)
        count = 0
        while True:
            try:
                if keyed:
                    if buf[pos] != '"':
                        break
                    _, end = raw(buf, pos)
                    end = space(buf, end).end()  # type: ignore[union-attr]
                    if end >= size or buf[end] != ":":
                        break
                    end = space(buf, end + 1).end()  # type: ignore[union-attr]
                    if end >= size:
                        break
                    _, end = raw(buf, end)
                else:
                    _, end = raw(buf, pos)
            except (ValueError, StopIteration):
                break
            if end >= size:  # a number at the window's end may go on
                break
            count += 1
            end = space(buf, end).end()  # type: ignore[union-attr]
            if end >= size or buf[end] != ",":
                self._pos = end
                return count, True
            after = space(buf, end + 1).end()  # type: ignore[union-attr]
            if after >= size:
                self._pos = end
                return count, True
            pos = after
        self._pos = pos
        return count, False

    def walk(self, shape: Shape | None, depth: int) -> None:
        """Record the value at the current position into ``shape`` (None: just skip it)."""
        char = self.peek()
        if char in ("{", "[") and depth < _STREAM_DEPTH:
            try:
                obj = self.value(_INLINE_VALUE_CHARS, peeked=True)
            except (_TooLarge, BudgetExhausted):
                # Too big to parse whole, or the budget ran out while trying: walk what
                # the window holds, so a cut-off scan still records this container.
                if char == "{":
                    self._walk_object(shape, depth)
                else:
                    self._walk_array(shape, depth)
                return
        else:
            try:
                obj = self.value(MAX_VALUE_CHARS, peeked=True)
            except _TooLarge:
                raise ExplorationError(
                    f"a single value larger than {fmt_bytes(MAX_VALUE_CHARS)} {self.where()}"
                ) from None
        if shape is not None:
            shape.add_value(obj, depth)

    def _walk_object(self, shape: Shape | None, depth: int) -> None:
        self._pos += 1
        if shape is not None:
            shape.open_object()
        skipped = 0
        try:
            if self.peek() == "}":
                self._pos += 1
                return
            while True:
                if shape is None or len(shape.fields) >= MAX_FIELDS:
                    # Nothing new can be recorded: skip members at C speed, counting them.
                    count, after_member = self._skip_run(keyed=True)
                    skipped += count if shape is not None else 0
                    if after_member:
                        if self.peek() == ",":
                            self._pos += 1
                            continue
                        self.expect("}")
                        return
                if self.peek() != '"':
                    raise ExplorationError(f"expected a key string {self.where()}")
                key = self.value(MAX_VALUE_CHARS, peeked=True)
                self.expect(":")
                sub = shape.field(str(key)) if shape is not None else None
                skipped += shape is not None and sub is None
                self.walk(sub, depth + 1)
                if self.peek() == ",":
                    self._pos += 1
                    continue
                self.expect("}")
                return
        finally:
            if shape is not None:
                shape.extra_fields = max(shape.extra_fields, skipped)

    def _walk_array(self, shape: Shape | None, depth: int) -> None:
        self._pos += 1
        element = shape.open_array() if shape is not None else None
        length = 0
        try:
            if self.peek() == "]":
                self._pos += 1
                return
            while True:
                if length >= SAMPLE_ELEMENTS:
                    # Past the sample elements are only counted: at C speed where possible.
                    count, after_element = self._skip_run(keyed=False)
                    length += count
                    if not after_element:
                        self.walk(None, depth + 1)
                        length += 1
                else:
                    self.walk(element, depth + 1)
                    length += 1
                if self.peek() == ",":
                    self._pos += 1
                    continue
                self.expect("]")
                return
        except BudgetExhausted:
            if shape is not None:
                shape.cut = True
            raise
        finally:
            if shape is not None:
                shape.close_array(length)
