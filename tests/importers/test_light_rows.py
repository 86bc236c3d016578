"""The parser process's light path (:mod:`mnesis.importers.light`: messages as plain
data, rows built without models) against the model path (pydantic messages and parts,
the store's batch check and ``encode_batch``) on the same lines: the same rows, running
calls, sessions, extensions and reported lines, batch by batch, or the same error.

Both run in this process with the same seeded IDs and clock, so the rows compare as
they are, IDs included. ``test_process_import.py`` compares the process path (light)
with the thread path (models) through real stores."""

from __future__ import annotations

import dataclasses
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnesis.importers import detect_format, parse_child
from mnesis.importers.batches import Batch, BatchBuilder
from mnesis.importers.formats import FORMATS
from mnesis.importers.light import LightMessage, LightTool, new_messages
from mnesis.importers.parse_child import prepared_batch
from mnesis.importers.pipeline import Limits, cut_batches
from mnesis.importers.reader import JsonLine, LineError, read_jsonl
from mnesis.importers.records import Text
from mnesis.importers.wire import load_batch
from mnesis.models.ids import seeded_ids
from mnesis.store.shared.batch import RowPreparer
from tests.importers.shapes import lines as split_lines

SAMPLES = Path(__file__).parent / "samples"


def _batches(
    source: list[JsonLine | LineError],
    fmt: str,
    *,
    light: bool,
    limits: Limits,
    sessions: dict[str, str] | None = None,
    tails: dict[str, Any] | None = None,
) -> list[Any]:
    """Every batch of ``source`` as the parser process prepares it (as plain values), or
    the error that stopped it."""
    parser = FORMATS[fmt]()
    builder = BatchBuilder(label=parser.label, sessions=sessions, tails=tails, light=light)
    preparer = RowPreparer({})
    out: list[Any] = []
    with seeded_ids(7):
        try:
            for batch in cut_batches(source, parser, builder, limits, (0, 0)):
                out.append(_plain(prepared_batch(batch, preparer)))
        except Exception as exc:
            out.append((type(exc).__name__, str(exc)))
    return out


def _plain(batch: Batch) -> dict[str, Any]:
    assert batch.rows is not None and not batch.messages and not batch.light
    data = {f.name: getattr(batch, f.name) for f in dataclasses.fields(batch)}
    data["rows"] = (batch.rows.starts, dataclasses.asdict(batch.rows.rows))
    data["extensions"] = [
        (e.session_key, e.message_id, [p.model_dump() for p in e.parts], e.tokens)
        for e in batch.extensions
    ]
    return data


def _both(source: list[JsonLine | LineError], fmt: str, **kwargs: Any) -> list[Any]:
    light = _batches(source, fmt, light=True, **kwargs)
    models = _batches(source, fmt, light=False, **kwargs)
    assert light == models
    assert repr(light) == repr(models)  # the same types too (0, 0.0 and False are equal)
    return light


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_child, "now_ms", lambda: 1_764_000_000_000)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("claude_code.jsonl", "claude-code"),
        ("codex_rollout.jsonl", "codex"),
        ("openai_chat.jsonl", "openai"),
        ("generic.jsonl", "jsonl"),
    ],
)
@pytest.mark.parametrize("messages", [1, 2, 3, 1000])
def test_samples_give_the_model_paths_rows(name: str, fmt: str, messages: int) -> None:
    source = list(read_jsonl(str(SAMPLES / name)))
    batches = _both(source, fmt, limits=Limits(messages, 10**6))
    assert any(b["rows"][1]["parts"] for b in batches)
    assert any(b["errors"] for b in batches), "each sample has a malformed line"


def test_the_whole_json_sample_gives_the_model_paths_rows() -> None:
    value = json.loads((SAMPLES / "openai_chat.json").read_text())
    items = value if isinstance(value, list) else [value]
    source: list[JsonLine | LineError] = [
        JsonLine(i + 1, item, i + 1) for i, item in enumerate(items)
    ]
    assert any(b["rows"][1]["parts"] for b in _both(source, "openai", limits=Limits(2, 10**6)))


def test_a_message_split_over_lines_and_imports_gives_the_model_paths_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "split.jsonl"
    path.write_text("".join(split_lines()))
    source = list(read_jsonl(str(path)))
    for cut in range(1, len(source)):
        first = _both(source[:cut], "claude-code", limits=Limits(1000, 10**6))
        last = first[-1]
        rest = _both(
            source[cut:],
            "claude-code",
            limits=Limits(2, 10**6),
            sessions=last["known_sessions"],
            tails=last["tails"],
        )
        assert all(isinstance(b, dict) for b in first + rest)


def _line(number: int, record: Any) -> JsonLine:
    return JsonLine(number, record, number * 100)


def test_hostile_values_raise_the_model_paths_errors() -> None:
    """A value a model or the store's check refuses stops both paths with one error."""
    base = {"sessionId": "s", "cwd": "/w", "timestamp": "2025-06-01T10:00:00Z"}
    hostile = [
        {"type": "tool_use", "id": "", "name": "Bash", "input": {}},  # no call ID
        {"type": "tool_use", "id": "t\x00", "name": "Bash", "input": {}},  # NUL
        {"type": "tool_use", "id": "t\ud800", "name": "Bash", "input": {}},  # surrogate
        {"type": "tool_use", "id": "t", "name": "B\x00", "input": {}},
    ]
    for block in hostile:
        record = {**base, "type": "assistant", "message": {"content": [block]}}
        out = _both([_line(1, record)], "claude-code", limits=Limits(10, 10**6))
        assert isinstance(out[-1], tuple), block
    for extra in ({"model": "m\ud800"}, {"stop_reason": "s\udfff"}):
        record = {**base, "type": "assistant", "message": {"content": "hi", **extra}}
        out = _both([_line(1, record)], "claude-code", limits=Limits(10, 10**6))
        assert out[-1][0] == "InvalidArgumentError"
    for stamp in (10**30, -(10**30)):
        record = {**base, "timestamp": stamp, "type": "user", "message": {"content": "hi"}}
        out = _both([_line(1, record)], "claude-code", limits=Limits(10, 10**6))
        assert out[-1][0] == "ValidationError"
    late = {"type": "tool_result", "tool_use_id": "t", "content": "done"}
    records = [
        {**base, "type": "assistant", "message": {"content": [hostile[0] | {"id": "t"}]}},
        {**base, "timestamp": 10**20, "type": "user", "message": {"content": [late]}},
    ]
    source: list[JsonLine | LineError] = [_line(i + 1, r) for i, r in enumerate(records)]
    out = _both(source, "claude-code", limits=Limits(10, 10**6))
    assert out[-1][0] == "InvalidArgumentError"  # the result's time: the store's check


def test_a_nul_in_the_model_name_is_stored_as_the_model_path_stores_it() -> None:
    record = {"type": "assistant", "message": {"content": "hi", "model": "m\x00"}}
    out = _both([_line(1, record)], "claude-code", limits=Limits(10, 10**6))
    assert out[-1]["rows"][1]["messages"][0][5] == "m\x00"


def test_light_parts_turn_into_the_model_paths_models() -> None:
    tool = LightTool("Bash", "t1", {"n": 2**70}, 5)
    tool.output, tool.state, tool.completed_at, tool.error_message = "boom", "error", 9, "boom"
    message = LightMessage("msg_1", "sess_1", "assistant", 5, "m", "stop", 12)
    (item,) = new_messages([(message, [Text("a"), Text("b", reasoning=True), tool], [1, 1, 9])])
    assert item.message.model_dump() == message.trusted().model_dump()
    assert [p.model_dump() for p in item.parts] == [
        {
            "id": None,
            "type": "text",
            "text": "a",
            "synthetic": False,
            "ignored": False,
            "wire": None,
        },
        {"id": None, "type": "reasoning", "text": "b", "wire": None},
        {
            "id": None,
            "type": "tool",
            "tool_name": "Bash",
            "tool_call_id": "t1",
            "input": {"n": 2**70},
            "output": "boom",
            "error_message": "boom",
            "title": None,
            "status": {"state": "error", "compacted_at": None, "started_at": 5, "completed_at": 9},
            "wire": None,
        },
    ]


# -- generated records of the light shapes -------------------------------------------
_odd_text = st.text(
    alphabet=st.characters(codec=None, categories=None, exclude_categories=()),
    max_size=40,
) | st.sampled_from(["", " ", "\x00", "\ud800", "a\udfffb", "中文字符", "é" * 40, "x" * 700])
_json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _odd_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_odd_text, inner, max_size=3),
    max_leaves=8,
)
_stamp = st.one_of(
    st.none(),
    st.sampled_from(["2025-06-01T10:00:00.000Z", "2025-06-01T10:00:01Z", "bad", ""]),
    st.integers(min_value=-(2**66), max_value=2**66),
    st.floats(min_value=-1e12, max_value=1e12),
)
_ids = st.sampled_from(["t1", "t2", "t3", "", None, "t\x00", 7])
_blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, _odd_text),
    st.builds(lambda t: {"type": "thinking", "thinking": t}, _odd_text),
    st.builds(
        lambda i, n, x: {"type": "tool_use", "id": i, "name": n, "input": x},
        _ids,
        st.sampled_from(["Bash", "", None, "Read\ud800", "é"]),
        _json_value,
    ),
    st.builds(
        lambda i, c, e: {"type": "tool_result", "tool_use_id": i, "content": c, "is_error": e},
        _ids,
        _odd_text | st.lists(st.builds(lambda t: {"type": "text", "text": t}, _odd_text)),
        st.booleans(),
    ),
)


@st.composite
def _record(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["user", "assistant", "assistant", "summary", "other"]))
    record: dict[str, Any] = {"type": kind, "sessionId": "s1", "cwd": "/w"}
    if draw(st.booleans()):
        record["timestamp"] = draw(_stamp)
    if draw(st.integers(0, 4)) == 0:
        record["isSidechain"] = True
    content = draw(_odd_text | st.lists(_blocks, max_size=4))
    message: dict[str, Any] = {"content": content}
    if kind == "assistant":
        message["id"] = draw(st.sampled_from(["m1", "m2", None]))
        message["model"] = draw(st.sampled_from(["claude", "<synthetic>", None, "c\x00"]))
        message["stop_reason"] = draw(st.sampled_from([None, "end_turn", "tool_use"]))
    if kind == "summary":
        record["summary"] = draw(_odd_text)
    elif draw(st.integers(0, 9)) > 0:
        record["message"] = message
    return record


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record(), max_size=12), st.integers(1, 4))
def test_generated_claude_code_records_give_the_model_paths_rows(
    records: list[Any], messages: int
) -> None:
    source: list[JsonLine | LineError] = [_line(i + 1, r) for i, r in enumerate(records)]
    _both(source, "claude-code", limits=Limits(messages, 10**6))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.builds(
                lambda r, t: {"type": "message", "role": r, "content": t},
                st.sampled_from(["user", "assistant", "developer", "bad"]),
                _odd_text,
            ),
            st.builds(lambda t: {"type": "reasoning", "summary": [{"text": t}]}, _odd_text),
            st.builds(
                lambda i, a: {"type": "function_call", "call_id": i, "name": "sh", "arguments": a},
                _ids,
                _odd_text | _json_value,
            ),
            st.builds(
                lambda i, o: {"type": "function_call_output", "call_id": i, "output": o},
                _ids,
                _odd_text,
            ),
        ).map(lambda item: {"type": "response_item", "payload": item, "timestamp": 1e9}),
        max_size=10,
    ),
    st.integers(1, 3),
)
def test_generated_codex_items_give_the_model_paths_rows(records: list[Any], messages: int) -> None:
    source: list[JsonLine | LineError] = [_line(i + 1, r) for i, r in enumerate(records)]
    _both(source, "codex", limits=Limits(messages, 10**6))


def test_floats_in_tool_input_are_stored_as_the_model_path_stores_them() -> None:
    block = {"type": "tool_use", "id": "t", "name": "n", "input": {"x": 1e16, "y": math.pi}}
    record = {"type": "assistant", "message": {"content": [block]}}
    out = _both([_line(1, record)], "claude-code", limits=Limits(10, 10**6))
    assert "1e+16" in out[-1]["rows"][1]["parts"][0][6]


def _frames(data: bytes) -> list[str]:
    """The frames of a parser process's output, each batch as the writer loads it."""
    out = []
    while data:
        size = int.from_bytes(data[1 : parse_child.HEADER_BYTES], "big")
        payload = data[parse_child.HEADER_BYTES : parse_child.HEADER_BYTES + size]
        out.append(repr(load_batch(payload)) if data[:1] == parse_child.BATCH else repr(data[:1]))
        data = data[parse_child.HEADER_BYTES + size :]
    return out


@pytest.mark.parametrize("name", ["claude_code.jsonl", "codex_rollout.jsonl"])
def test_the_parser_process_sends_the_model_paths_batches(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What crosses the pipe, as the writing process loads it: the same work for it.
    (Not the same bytes: marshal writes a string the light path shares, such as the
    ``{}`` of every plain text part, once and then refers to it.)"""
    fmt = "claude-code" if name.startswith("claude") else "codex"
    job = parse_child.ParseJob(str(SAMPLES / name), fmt, 0, 0, Limits(2, 10**6), starts={})
    frames = []
    for light in (True, False):
        monkeypatch.setattr(
            parse_child,
            "BatchBuilder",
            lambda light_mode=light, **kwargs: BatchBuilder(**{**kwargs, "light": light_mode}),
        )
        out = io.BytesIO()
        with seeded_ids(3):
            parse_child.run(job, out)
        frames.append(_frames(out.getvalue()))
    assert frames[0] == frames[1]
    assert len(frames[0]) >= 2 and frames[0][-1] == repr(parse_child.END)


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (SAMPLES / "corpus").rglob("*.jsonl") if p.stat().st_size),
    ids=lambda p: p.name[:40],
)
def test_the_corpus_gives_the_model_paths_rows(path: Path) -> None:
    """Batches of one message: every cut, and the parser state each carries."""
    fmt = detect_format(str(path))
    _both(list(read_jsonl(str(path))), fmt, limits=Limits(1, 10**6))
