"""Wall-clock time as mnesis stores it: milliseconds since the Unix epoch."""

from __future__ import annotations

import time

__all__ = ["now_ms"]


def now_ms() -> int:
    """The current time in whole milliseconds since the Unix epoch."""
    return int(time.time() * 1000)
