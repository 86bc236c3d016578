"""Explorers of data files: JSON, JSON Lines, YAML and TOML.

JSON is read as a stream: containers near the top (the first
``_STREAM_DEPTH`` levels) are walked element by element, anything below is
parsed whole with the C decoder, so memory stays bounded by the largest single
nested value (at most :data:`~._json_stream.MAX_VALUE_CHARS`) whatever the file size. Past
:data:`JSON_SCAN_BYTES` the scan stops and the summary says its counts are lower
bounds.
"""

from __future__ import annotations

import json
import json.scanner
import re
import tomllib
from pathlib import Path
from typing import Any

from mnesis.files.explorers._common import (
    CHUNK_BYTES,
    PARSE_LIMIT_BYTES,
    ExplorationError,
    LineReader,
    SummaryBuilder,
    read_text,
)
from mnesis.files.explorers._format import clip, fmt_bytes, fmt_int
from mnesis.files.explorers._json_stream import MAX_VALUE_CHARS, BudgetExhausted, JsonStream
from mnesis.files.explorers._shape import SAMPLE_ELEMENTS, Shape, render_shape

__all__ = ["JSON_SCAN_BYTES", "explore_json", "explore_jsonl", "explore_toml", "explore_yaml"]

JSON_SCAN_BYTES = PARSE_LIMIT_BYTES
"""A JSON file is scanned up to this many bytes (20 MB); past it the counts are lower
bounds. CPython decodes JSON at a few tens of MB/s, so this bounds the time too."""
_LEGEND = "('?' marks keys missing from some objects; array elements are merged from the first "
_LEGEND += f"{fmt_int(SAMPLE_ELEMENTS)} of each array.)"


def explore_json(path: Path, size: int) -> str:
    """Top-level kind, keys with their types, array lengths and element fields."""
    shape = Shape()
    stopped = False
    with open(path, "rb") as handle:
        stream = JsonStream(handle, JSON_SCAN_BYTES)
        try:
            if stream.peek() == "":
                raise ExplorationError("the file holds no JSON value (it is empty)")
            stream.walk(shape, 0)
            if stream.peek() != "":
                raise ExplorationError(
                    "extra data after the first top-level value "
                    f"{stream.where()} (JSON Lines should be named .jsonl)"
                )
        except BudgetExhausted:
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
            line = handle.readline(MAX_VALUE_CHARS)
            if not line:
                break
            if len(line) == MAX_VALUE_CHARS and not line.endswith(b"\n"):
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
