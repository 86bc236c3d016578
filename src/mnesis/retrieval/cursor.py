"""Opaque ``grep`` cursors: the paging state of a search, as a URL-safe string."""

from __future__ import annotations

import base64
import binascii
import json
from typing import cast

from mnesis.errors import InvalidArgumentError

__all__ = ["MAX_CURSOR_LENGTH", "MAX_CURSOR_VALUE", "decode_cursor", "encode_cursor"]

MAX_CURSOR_LENGTH = 4096
"""The longest cursor string accepted (the ones ``encode_cursor`` makes are ~100)."""
MAX_CURSOR_VALUE = 2**53 - 1
"""The largest offset or key a cursor may carry."""


def encode_cursor(state: dict[str, int]) -> str:
    """The cursor a caller passes back to continue after ``state``."""
    return base64.urlsafe_b64encode(json.dumps(state).encode()).decode("ascii")


def decode_cursor(cursor: str | None) -> dict[str, int]:
    """The paging state of ``cursor`` (empty for the first page).

    Raises ``InvalidArgumentError`` for anything ``encode_cursor`` did not produce,
    including over-long cursors and out-of-range offsets, before decoding any JSON
    nesting of unbounded depth.
    """
    if cursor is None:
        return {}
    problem = "cursor is not one returned by grep"
    if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_LENGTH:
        raise InvalidArgumentError(problem)
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii"))
        if not raw.startswith(b"{") or b"[" in raw or raw.count(b"{") != 1:
            raise ValueError("not a flat JSON object")
        data = json.loads(raw)
    except (ValueError, UnicodeEncodeError, binascii.Error, RecursionError):
        raise InvalidArgumentError(problem) from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str)
        and isinstance(v, int)
        and not isinstance(v, bool)
        and 0 <= v <= MAX_CURSOR_VALUE
        for k, v in data.items()
    ):
        raise InvalidArgumentError(problem)
    return cast(dict[str, int], data)
