"""Hostile values the fuzz tests share: extreme integers and JSON-shaped values."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

__all__ = ["HOSTILE_INTS", "ints", "json_values"]

HOSTILE_INTS = [-1, 0, 1, 2**31, 2**53, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63) - 1]
"""Around the 32-, 53- and 64-bit limits, and far past them."""

ints = st.one_of(st.sampled_from(HOSTILE_INTS), st.integers())


def json_values(texts: SearchStrategy[str], *, max_leaves: int) -> SearchStrategy[Any]:
    """Scalars (strings from ``texts``, NaN and infinities among the floats) nested in
    lists and objects, at most ``max_leaves`` of them."""
    scalars = st.one_of(
        st.none(), st.booleans(), ints, st.floats(allow_nan=True, allow_infinity=True), texts
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
        max_leaves=max_leaves,
    )
