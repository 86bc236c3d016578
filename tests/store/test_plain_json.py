"""``dumps`` through orjson (``mnesis.store.plain_json``) writes what the standard
library's encoder writes, and leaves every value the two write differently to it."""

from __future__ import annotations

import enum
import json
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnesis.store.codec import dumps
from mnesis.store.plain_json import plain_json

pytest.importorskip("orjson")

_STDLIB = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text()
_plain_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_plain_values)
def test_plain_values_are_written_as_the_standard_library_writes_them(value: Any) -> None:
    assert plain_json(value) == _STDLIB.encode(value)
    assert dumps(value) == _STDLIB.encode(value)


def test_every_escape_matches() -> None:
    text = "".join(map(chr, range(0x800))) + "\u2028\u2029\ufeff\U0001f600"
    assert plain_json({"t": text}) == _STDLIB.encode({"t": text})


class _Colour(enum.Enum):
    RED = "red"


class _Name(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        1.5,
        1e16,
        float("nan"),
        {"x": [1, 2.0]},
        2**64,
        -(2**63) - 1,
        "\ud800",
        {1: "int key"},
        _Colour.RED,
        uuid.UUID(int=1),
        _Name("a subclass"),
    ],
)
def test_values_the_encoders_write_differently_stay_with_the_standard_library(
    value: Any,
) -> None:
    assert plain_json(value) is None


def test_nesting_orjson_refuses_falls_back() -> None:
    value: Any = []
    for _ in range(300):  # orjson stops at 255 levels
        value = [value]
    assert plain_json(value) is None
    assert dumps(value) == _STDLIB.encode(value)


def test_a_cycle_is_refused_as_the_standard_library_refuses_it() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    assert plain_json(cycle) is None
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(cycle)


def test_lone_surrogates_still_stored_escaped() -> None:
    assert dumps({"t": "a\ud800b"}) == '{"t":"a\\ud800b"}'
