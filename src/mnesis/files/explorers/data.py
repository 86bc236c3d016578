"""Explorers of data files: JSON, JSON Lines, YAML and TOML.

JSON is read as a stream: containers near the top (the first
:data:`_STREAM_DEPTH` levels) are walked element by element, anything below is
parsed whole with the C decoder, so memory stays bounded by the largest single
nested value (at most :data:`_MAX_VALUE_CHARS`) whatever the file size. Past
:data:`JSON_SCAN_BYTES` the scan stops and the summary says its counts are lower
bounds.
"""

from __future__ import annotations

import codecs
import json
import json.scanner
import re
import tomllib
from pathlib import Path
from typing import Any, BinaryIO

from mnesis.files.explorers._common import (
    CHUNK_BYTES,
    PARSE_LIMIT_BYTES,
    ExplorationError,
    LineReader,
    SummaryBuilder,
    clip,
    fmt_bytes,
    fmt_int,
    read_text,
)
from mnesis.files.explorers._shape import MAX_FIELDS, SAMPLE_ELEMENTS, Shape, render_shape

__all__ = ["JSON_SCAN_BYTES", "explore_json", "explore_jsonl", "explore_toml", "explore_yaml"]

JSON_SCAN_BYTES = PARSE_LIMIT_BYTES
"""A JSON file is scanned up to this many bytes (20 MB); past it the counts are lower
bounds. CPython decodes JSON at a few tens of MB/s, so this bounds the time too."""
_STREAM_DEPTH = 3
_INLINE_VALUE_CHARS = 1 << 20
"""A container that fits in this many characters is parsed whole (fast), not walked."""
_MAX_VALUE_CHARS = 16 << 20
"""The largest single value parsed whole (below the streamed levels)."""
_WS = re.compile(r"[ \t\n\r]*")
_LEGEND = "('?' marks keys missing from some objects; array elements are merged from the first "
_LEGEND += f"{fmt_int(SAMPLE_ELEMENTS)} of each array.)"


class _BudgetExhausted(Exception):
    """The scan read :data:`JSON_SCAN_BYTES`; what was seen so far is kept."""


class _TooLarge(Exception):
    """A value does not fit the parse-whole limit; walk it instead."""


class _JsonStream:
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
            raise _BudgetExhausted
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
            except (_TooLarge, _BudgetExhausted):
                # Too big to parse whole, or the budget ran out while trying: walk what
                # the window holds, so a cut-off scan still records this container.
                if char == "{":
                    self._walk_object(shape, depth)
                else:
                    self._walk_array(shape, depth)
                return
        else:
            try:
                obj = self.value(_MAX_VALUE_CHARS, peeked=True)
            except _TooLarge:
                raise ExplorationError(
                    f"a single value larger than {fmt_bytes(_MAX_VALUE_CHARS)} {self.where()}"
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
                key = self.value(_MAX_VALUE_CHARS, peeked=True)
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
        except _BudgetExhausted:
            if shape is not None:
                shape.cut = True
            raise
        finally:
            if shape is not None:
                shape.close_array(length)


def explore_json(path: Path, size: int) -> str:
    """Top-level kind, keys with their types, array lengths and element fields."""
    shape = Shape()
    stopped = False
    with open(path, "rb") as handle:
        stream = _JsonStream(handle, JSON_SCAN_BYTES)
        try:
            if stream.peek() == "":
                raise ExplorationError("the file holds no JSON value (it is empty)")
            stream.walk(shape, 0)
            if stream.peek() != "":
                raise ExplorationError(
                    "extra data after the first top-level value "
                    f"{stream.where()} (JSON Lines should be named .jsonl)"
                )
        except _BudgetExhausted:
            stopped = True
    out = SummaryBuilder()
    out.add(f"JSON document, top level: {shape.describe()}")
    if stopped:
        out.add(
            f"Note: scan stopped after the first {fmt_bytes(JSON_SCAN_BYTES)} of "
            f"{fmt_bytes(size)}; lengths and counts below are lower bounds."
        )
    render_shape(shape, out)
    if shape.fields or shape.element is not None:
        out.add(_LEGEND)
    return out.text()


def explore_jsonl(path: Path, size: int) -> str:
    """Record count and the merged fields of the first records."""
    shape = Shape()
    parsed = invalid = sampled = 0
    first_error = ""
    rest_lines = 0
    with open(path, "rb") as handle:
        while sampled < SAMPLE_ELEMENTS:
            line = handle.readline(_MAX_VALUE_CHARS)
            if not line:
                break
            if len(line) == _MAX_VALUE_CHARS and not line.endswith(b"\n"):
                while (more := handle.readline(CHUNK_BYTES)) and not more.endswith(b"\n"):
                    pass
                invalid += 1
                sampled += 1
                first_error = first_error or "a line longer than 16 MB"
                continue
            if not line.strip():
                continue
            sampled += 1
            try:
                shape.add_value(json.loads(line))
                parsed += 1
            except ValueError as exc:
                invalid += 1
                first_error = first_error or f"line {sampled}: {exc}"
        last = b"\n"
        while chunk := handle.read(CHUNK_BYTES):
            rest_lines += chunk.count(b"\n")
            last = chunk[-1:]
        rest_lines += last != b"\n"
    if sampled and not parsed:
        raise ExplorationError(f"no line is valid JSON ({first_error})")
    out = SummaryBuilder()
    total = sampled + rest_lines
    out.add(f"JSON Lines: {fmt_int(total)} records")
    if invalid:
        out.add(
            f"{fmt_int(invalid)} of the first {fmt_int(sampled)} lines are not valid JSON "
            f"(first: {clip(first_error, 120)})"
        )
    out.add(f"Record shape (merged from the first {fmt_int(sampled)} records): {shape.describe()}")
    render_shape(shape, out)
    return out.text()


# -- YAML ----------------------------------------------------------------------
_YAML_KEY = re.compile(r"""^(?![-#.%\s])("[^"]*"|'[^']*'|[^:#]+?)\s*:(?:\s+(.*))?$""")


def explore_yaml(path: Path, size: int) -> str:
    """Top-level keys with their types (PyYAML), or a line scan of them."""
    try:
        import yaml
    except ImportError:
        return _yaml_line_scan(path, "PyYAML is not installed (pip install 'mnesis-lcm[files]')")
    if size > PARSE_LIMIT_BYTES:
        return _yaml_line_scan(path, f"larger than {fmt_bytes(PARSE_LIMIT_BYTES)}")
    shape = Shape()
    documents = 0
    try:
        for document in yaml.safe_load_all(read_text(path)):
            documents += 1
            if documents == 1:
                shape.add_value(document)
            if documents >= 1_000:
                break
    except yaml.YAMLError as exc:
        raise ExplorationError(" ".join(str(exc).split())) from None
    out = SummaryBuilder()
    plural = f"{fmt_int(documents)} documents (the first is described)" if documents > 1 else ""
    out.add(f"YAML {plural or 'document'}, top level: {shape.describe()}")
    render_shape(shape, out)
    return out.text()


def _yaml_line_scan(path: Path, reason: str) -> str:
    keys: list[str] = []
    documents = 0
    seen_content = False
    with LineReader(path) as reader:
        for line in reader:
            if line.startswith("---"):
                documents += 1
                seen_content = True
                continue
            match = _YAML_KEY.match(line)
            if match is None:
                continue
            if not seen_content:
                documents += 1
                seen_content = True
            value = (match.group(2) or "").strip()
            keys.append(f"  {clip(match.group(1), 60)}: {clip(value, 60) if value else '(nested)'}")
        truncated = reader.truncated
    out = SummaryBuilder()
    out.add(f"YAML ({reason}; top-level keys from a line scan), {fmt_int(len(keys))} keys:")
    if truncated:
        out.add("Note: the scan stopped early; later keys are not listed.")
    for key in keys:
        if not out.add(key):
            break
    return out.text()


# -- TOML ----------------------------------------------------------------------
_TOML_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")


def explore_toml(path: Path, size: int) -> str:
    """Tables, arrays of tables and their keys."""
    if size > PARSE_LIMIT_BYTES:
        return _toml_line_scan(path)
    try:
        data = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ExplorationError(str(exc)) from None
    out = SummaryBuilder()
    tables = sum(1 for _ in _iter_tables(data, ""))
    out.add(f"TOML document: {fmt_int(len(data))} top-level entries, {fmt_int(tables)} tables")
    for name, table in _iter_tables(data, ""):
        if not _toml_table_line(name, table, out):
            break
    return out.text()


def _is_table_array(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _iter_tables(table: dict[str, Any], prefix: str) -> Any:
    """``(dotted name, table)`` for ``table`` and every table below it, depth first."""
    yield prefix, table
    for key, value in table.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _iter_tables(value, name)
        elif _is_table_array(value):
            yield f"[{name}]", value


def _toml_brief(value: object) -> str:
    if isinstance(value, str):
        return clip(json.dumps(value, ensure_ascii=False), 32)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return f"array[{len(value)}]"
    return clip(str(value), 32)


def _toml_table_line(name: str, table: dict[str, Any] | list[Any], out: SummaryBuilder) -> bool:
    if isinstance(table, list):
        keys: dict[str, None] = {}
        for entry in table:
            keys.update(dict.fromkeys(entry))
        shown = ", ".join(clip(k, 40) for k in list(keys)[:20])
        more = f", … {len(keys) - 20} more" if len(keys) > 20 else ""
        entries = "entry" if len(table) == 1 else "entries"
        return out.add(f"[{name}] {fmt_int(len(table))} {entries}; keys: {shown}{more}")
    scalars = [
        (k, v) for k, v in table.items() if not isinstance(v, dict) and not _is_table_array(v)
    ]
    if not scalars and (table or not name):
        return True
    header = f"[{name}]" if name else "Top-level keys:"
    shown = ", ".join(f"{clip(k, 40)} = {_toml_brief(v)}" for k, v in scalars[:12])
    more = f", … {len(scalars) - 12} more" if len(scalars) > 12 else ""
    return out.add(f"{header} {shown or '(empty)'}{more}")


def _toml_line_scan(path: Path) -> str:
    out = SummaryBuilder()
    headers: list[str] = []
    with LineReader(path) as reader:
        for line in reader:
            match = _TOML_HEADER.match(line)
            if match is not None:
                brackets = match.group(1)
                headers.append(f"{brackets}{match.group(2)}{']' * len(brackets)}")
    out.add(
        f"TOML (larger than {fmt_bytes(PARSE_LIMIT_BYTES)}; tables from a line scan), "
        f"{fmt_int(len(headers))} table headers:"
    )
    for header in headers:
        if not out.add(f"  {header}"):
            break
    return out.text()
