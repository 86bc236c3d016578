"""Streaming JSONL reading with byte offsets, so an import can resume where it stopped."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonLine", "LineError", "fingerprint", "read_jsonl"]

FINGERPRINT_BYTES = 4096


@dataclass(slots=True, frozen=True)
class JsonLine:
    """One decoded line: its 1-based number, its value and the offset just past it."""

    number: int
    value: Any
    end_offset: int


@dataclass(slots=True, frozen=True)
class LineError:
    """A line that is not JSON (reported, then skipped)."""

    number: int
    message: str
    end_offset: int


def fingerprint(path: str, length: int) -> str:
    """SHA-256 of the first ``length`` bytes of ``path`` (identifies a file's beginning)."""
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read(length)).hexdigest()


_DECODER = json.JSONDecoder()


def _decode(raw: bytes) -> Any:
    """``json.loads(raw)``, with a fast path for a line of plain UTF-8 (no encoding to
    detect, no BOM)."""
    try:
        return _DECODER.decode(raw.decode("utf-8"))
    except ValueError:
        return json.loads(raw)


def read_jsonl(path: str, *, offset: int = 0, line: int = 0) -> Iterator[JsonLine | LineError]:
    """Decode ``path`` line by line from byte ``offset`` (line number ``line``).

    Memory is bounded by the longest line. Blank lines are skipped. A last line without
    a newline that does not decode is taken to be still being written: it is neither
    yielded nor reported, so the next import reads it whole.
    """
    with open(path, "rb") as handle:
        handle.seek(offset)
        position = offset
        number = line
        for raw in handle:
            number += 1
            position += len(raw)
            if raw.isspace():
                continue
            try:
                value = _decode(raw)
            except ValueError as exc:
                if not raw.endswith(b"\n"):
                    return
                yield LineError(number, f"not JSON: {exc}", position)
                continue
            yield JsonLine(number, value, position)
