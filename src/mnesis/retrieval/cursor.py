"""Opaque ``grep`` cursors: the paging state of a search, as a URL-safe string."""

from __future__ import annotations

import base64
import binascii
import json
from typing import cast

from mnesis.errors import InvalidArgumentError

__all__ = ["decode_cursor", "encode_cursor"]


def encode_cursor(state: dict[str, int]) -> str:
    """The cursor a caller passes back to continue after ``state``."""
    return base64.urlsafe_b64encode(json.dumps(state).encode()).decode("ascii")


def decode_cursor(cursor: str | None) -> dict[str, int]:
    """The paging state of ``cursor`` (empty for the first page).

    Raises ``InvalidArgumentError`` for anything ``encode_cursor`` did not produce.
    """
    if cursor is None:
        return {}
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in data.items()
        ):
            raise ValueError("bad cursor")
        return cast(dict[str, int], data)
    except (ValueError, UnicodeEncodeError, binascii.Error, AttributeError):
        raise InvalidArgumentError("cursor is not one returned by grep") from None
