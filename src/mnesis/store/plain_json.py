"""The stored JSON of plain values through orjson, byte for byte what the standard
library's encoder in :func:`mnesis.store.codec.dumps` writes, in less than half the
time (a tool part's JSON: ~3.5 µs; orjson ~0.3 µs, the check that the value is plain
~1.2 µs).

Only values made of exact ``dict`` (string keys), ``list``, ``tuple``, ``str``,
``int``, ``bool`` and ``None`` take this path: the two encoders write those the same
way (no spaces, non-ASCII kept, the same escapes). Floats (``1e+16`` against
``1e16``, ``NaN`` against ``null``), subclasses and every other type stay with the
standard library, and so does whatever orjson refuses (integers outside 64 bits, lone
surrogates, deep nesting).
"""

from __future__ import annotations

from typing import Any

__all__ = ["plain_json"]

_SCALARS = frozenset((str, int, bool, type(None)))


def _plain(values: Any) -> bool:
    """Whether every item of the iterable ``values`` is plain (see the module)."""
    for value in values:
        kind = type(value)
        if kind in _SCALARS:
            continue
        if kind is dict:
            for key in value:
                if type(key) is not str:
                    return False
            if not _plain(value.values()):
                return False
        elif kind is list or kind is tuple:
            if not _plain(value):
                return False
        else:
            return False
    return True


def _stdlib_only(value: Any) -> str | None:
    """Without orjson (the optional ``import`` extra): always None."""
    return None


def _through_orjson(value: Any) -> str | None:
    """``value``'s JSON when it is plain and orjson writes it; None otherwise."""
    try:
        if not _plain((value,)):
            return None
        return _orjson_dumps(value).decode("utf-8")
    except (TypeError, RecursionError):  # orjson's JSONEncodeError is a TypeError
        return None


try:
    from orjson import dumps as _orjson_dumps
except ImportError:  # the ``import`` extra is optional
    plain_json = _stdlib_only
else:
    plain_json = _through_orjson
"""``value``'s JSON as :func:`~mnesis.store.codec.dumps` writes it, when it is plain
(see the module's docstring) and orjson is installed; None: encode it otherwise."""
