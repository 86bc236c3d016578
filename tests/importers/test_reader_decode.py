"""The fast line decoder (orjson, the ``import`` extra) gives what the standard library
gives, value for value and error for error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnesis.importers import reader
from mnesis.importers.reader import JsonLine, LineError, read_jsonl

pytest.importorskip("orjson")

TRICKY = [
    b'{"n":123456789012345678901234567890}',
    b'{"n":-9223372036854775809}',
    b'{"n":18446744073709551616}',
    b'{"n":18446744073709551615}',
    b'{"n":9223372036854775807,"m":-9223372036854775808}',
    b'{"f":1e400}',
    b'{"f":-1e400}',
    b'{"f":1e-400}',
    b'{"f":NaN}',
    b'{"f":Infinity}',
    b'{"f":0.1,"g":5e-324,"h":1.7976931348623157e308,"z":-0.0}',
    b'{"s":"\\ud800"}',
    b'{"s":"\\udc00x\\ud83d\\ude00"}',
    b'{"s":"a\\u0000b"}',
    b'{"s":"a\x00b"}',
    b'{"s":"\xff"}',
    b'{"s":"\xed\xa0\x80"}',
    b'\xef\xbb\xbf{"bom":1}',
    b'{"a":1,"a":2}',
    b'{"digits":"1234567890123456789012"}',
    b"[1,]",
    b"{",
    b'"just a string"',
    b"42",
]


def _outcome(decode: Any, raw: bytes) -> tuple[str, Any]:
    try:
        value = decode(raw)
    except ValueError as exc:
        return ("error", str(exc))
    return ("value", json.dumps(value, allow_nan=True))


def _same(raw: bytes) -> None:
    fast, slow = _outcome(reader._decode_fast, raw), _outcome(reader._decode_stdlib, raw)
    assert fast == slow, raw


@pytest.mark.parametrize("raw", TRICKY)
def test_a_tricky_line_decodes_as_the_standard_library_decodes_it(raw: bytes) -> None:
    _same(raw)
    _same(raw + b"\n")


def test_a_big_integer_stays_exact() -> None:
    value = reader._decode_fast(b'{"n":123456789012345678901234567890}')
    assert value == {"n": 123456789012345678901234567890}
    assert isinstance(value["n"], int)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_json, st.booleans())
def test_any_json_value_decodes_as_the_standard_library_decodes_it(
    value: Any, ascii_only: bool
) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    _same(raw)


def test_a_file_reads_the_same_with_either_decoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tricky.jsonl"
    path.write_bytes(b"\n".join(TRICKY) + b"\n")
    fast = list(read_jsonl(str(path)))
    monkeypatch.setattr(reader, "_decode", reader._decode_stdlib)
    slow = list(read_jsonl(str(path)))

    def key(item: JsonLine | LineError) -> tuple[Any, ...]:
        if isinstance(item, LineError):
            return ("error", item.number, item.message, item.end_offset)
        text = json.dumps(item.value, allow_nan=True)
        return ("line", item.number, text, item.end_offset)

    assert [key(item) for item in fast] == [key(item) for item in slow]
    errors = {item.number for item in fast if isinstance(item, LineError)}
    assert {TRICKY.index(raw) + 1 for raw in (b'{"s":"\xff"}', b"[1,]", b"{")} <= errors
