"""Streaming JSONL reading with byte offsets, so an import can resume where it stopped."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["SKIPPED", "JsonLine", "LineError", "fingerprint", "read_jsonl"]

FINGERPRINT_BYTES = 4096


class JsonLine(NamedTuple):
    """One decoded line: its 1-based number, its value and the offset just past it. (A
    named tuple: a frozen dataclass costs about a microsecond a line to build.)"""

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


def _decode_stdlib(raw: bytes) -> Any:
    """``json.loads(raw)``, with a fast path for a line of plain UTF-8 (no encoding to
    detect, no BOM)."""
    try:
        return _DECODER.decode(raw.decode("utf-8"))
    except ValueError:
        return json.loads(raw)


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGIT_RUN = b"0" * 19
"""orjson reads an integer outside 64 bits as a float; the standard library keeps it
exact. A line with 19 digits in a row (an integer near or past 64 bits, or just a
long number in a string) goes to the standard library."""


def _decode_fast(raw: bytes) -> Any:
    """What :func:`_decode_stdlib` gives, through orjson where that is the same value.

    orjson refuses what the standard library reads differently (``NaN``, ``1e400``, lone
    surrogates, a BOM): those lines, and every line orjson refuses, go to the standard
    library, so a malformed line is reported with the standard library's message."""
    if _LONG_DIGIT_RUN not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return _orjson_loads(raw)
        except ValueError:
            pass
    return _decode_stdlib(raw)


try:
    from orjson import loads as _orjson_loads
except ImportError:  # the ``import`` extra is optional
    _decode = _decode_stdlib
else:
    _decode = _decode_fast


SKIPPED: Any = object()
"""The value of a line :func:`read_jsonl` left undecoded (its ``skip`` said so)."""


def read_jsonl(
    path: str,
    *,
    offset: int = 0,
    line: int = 0,
    skip: Callable[[bytes], bool] | None = None,
) -> Iterator[JsonLine | LineError]:
    """Decode ``path`` line by line from byte ``offset`` (line number ``line``).

    Memory is bounded by the longest line. Blank lines are skipped. A last line without
    a newline that does not decode is taken to be still being written: it is neither
    yielded nor reported, so the next import reads it whole. A whole line (newline
    included) for which ``skip`` is true is not decoded: it comes with the value
    :data:`SKIPPED` (the format's parser would have made nothing of it).
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
            if skip is not None and skip(raw) and raw.endswith(b"\n"):
                yield JsonLine(number, SKIPPED, position)
                continue
            try:
                value = _decode(raw)
            except ValueError as exc:
                if not raw.endswith(b"\n"):
                    return
                yield LineError(number, f"not JSON: {exc}", position)
                continue
            yield JsonLine(number, value, position)
