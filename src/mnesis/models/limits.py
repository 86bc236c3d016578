"""Limits every backend can store: integers are 64-bit signed, JSON is nested boundedly.

Numeric fields of the models are validated against these bounds, so a value the API
accepts is always one the store can write and read back.
"""

from __future__ import annotations

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_JSON_DEPTH",
    "fits_int64",
    "json_depth_exceeds",
    "saturating_add",
]

INT64_MAX = 2**63 - 1
"""The largest integer a SQLite ``INTEGER`` / PostgreSQL ``BIGINT`` column holds."""
INT64_MIN = -(2**63)
"""The smallest integer a SQLite ``INTEGER`` / PostgreSQL ``BIGINT`` column holds."""
MAX_JSON_DEPTH = 100
"""The deepest nesting of lists and objects accepted in a JSON value (a tool's input)."""


def fits_int64(value: int) -> bool:
    """Whether ``value`` fits a 64-bit column (what the models' ``Int64`` fields accept)."""
    return INT64_MIN <= value <= INT64_MAX


def saturating_add(a: int, b: int) -> int:
    """``a + b`` clamped to ``INT64_MAX`` (running totals never leave the storage range)."""
    return min(a + b, INT64_MAX)


def json_depth_exceeds(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests lists/tuples/dicts deeper than ``limit`` (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list | tuple):
            children = list(item)
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
