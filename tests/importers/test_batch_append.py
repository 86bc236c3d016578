"""``append_batch``, the import's write path, on both backends: it stores exactly the rows
that appending the same messages one by one stores, checks the whole batch before
writing anything, and an import cut into tiny batches stores what one batch stores."""

from __future__ import annotations

import random
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mnesis.errors import InvalidArgumentError, SessionNotFoundError
from mnesis.importers import import_file
from mnesis.models import ids
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, ReasoningPart, TextPart, ToolPart, ToolStatus
from mnesis.models.tokens import TokenUsage
from mnesis.store import ImmutableStore
from mnesis.store.base import NewMessage, SearchFilter, SessionRecord
from mnesis.store.checks import check_new_message, check_new_messages
from mnesis.store.search_query import SearchQuery, Term
from tests.backends import backend, migrated_pg_template
from tests.pg_fixtures import _with_database

__all__ = ["backend", "migrated_pg_template"]

SAMPLES = Path(__file__).parent / "samples"
_CLOCK_COLUMNS = {"message_parts": "created_at", "context_items": "created_at"}
"""Columns that hold the time of the write, not anything of the message."""
_ORDER = {
    "messages": "session_id, seq",
    "message_parts": "message_id, ordinal",
    "context_items": "session_id, position",
}


@pytest.fixture
def locations(backend: str, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """Two fresh stores of the test's backend."""
    if backend == "sqlite":
        tmp = request.getfixturevalue("tmp_path")
        yield str(tmp / "batch.db"), str(tmp / "single.db")
        return
    dsn = str(request.getfixturevalue("pg_dsn"))
    template = str(request.getfixturevalue("migrated_pg_template"))
    names = [f"mnesis_test_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in names:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")  # type: ignore[arg-type]
    try:
        yield _with_database(dsn, names[0]), _with_database(dsn, names[1])
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for name in names:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


def _dump(location: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of the message tables, without the columns that record the write time."""
    out: dict[str, list[dict[str, Any]]] = {}
    for table, order in _ORDER.items():
        sql = f"SELECT * FROM {table} ORDER BY {order}"
        if location.startswith("postgresql://"):
            with psycopg.connect(location) as pg:
                cur = pg.execute(sql)  # type: ignore[arg-type]
                names = [d.name for d in cur.description or ()]
                rows = cur.fetchall()
        else:
            with sqlite3.connect(location) as conn:
                cur = conn.execute(sql)
                names = [d[0] for d in cur.description]
                rows = cur.fetchall()
        skip = _CLOCK_COLUMNS.get(table)
        out[table] = [{k: v for k, v in zip(names, row, strict=True) if k != skip} for row in rows]
    return out


def _messages(sessions: list[str]) -> list[NewMessage]:
    """Interleaved messages of two sessions: text, reasoning, tool calls running and done,
    preset part IDs, reported usage, one message outside the context."""
    out: list[NewMessage] = []
    for i in range(24):
        session_id = sessions[i % 2]
        word = ("alpha", "beta", "gamma", "delta", "epsilon")[i % 5]
        parts: list[MessagePart] = [TextPart(text=f"step {i}: check the {word} module\nok")]
        if i % 3 == 0:
            parts.insert(0, ReasoningPart(text=f"thinking about step {i}"))
        if i % 4 == 1:
            state = "running" if i % 8 == 1 else "completed"
            parts.append(
                ToolPart(
                    tool_name="Bash",
                    tool_call_id=f"call_{i}",
                    input={"command": f"make m{i}"},
                    output=None if state == "running" else f"built m{i}",
                    status=ToolStatus(state=state, started_at=1_000 + i),
                )
            )
        if i == 5:
            parts[0].id = ids.new_id("part")
        message = Message(
            id=ids.new_id("msg"),
            session_id=session_id,
            role="user" if i % 2 == 0 else "assistant",
            created_at=1_748_772_000_000 + i * 1000,
            model_id=None if i % 2 == 0 else "model-x",
            token_estimate=10 + i,
            tokens=TokenUsage(input=100, output=7) if i == 7 else None,
            cost=0.25 if i == 7 else 0.0,
        )
        tokens = [3 + i] * len(parts)
        out.append(NewMessage(message, parts, tokens, in_context=i != 11))
    return out


async def _open(location: str, sessions: list[str]) -> ImmutableStore:
    store = await ImmutableStore.open(location)
    for session_id in sessions:
        await store.create_session(
            SessionRecord(id=session_id, model="model-x", created_at=1, updated_at=1)
        )
    return store


async def test_a_batch_stores_the_rows_one_by_one_appends_store(
    locations: tuple[str, str],
) -> None:
    sessions = [ids.new_id("sess"), ids.new_id("sess")]
    batch = _messages(sessions)
    batched, single = [await _open(loc, sessions) for loc in locations]
    try:
        landed = await batched.append_batch(batch)
        # The same objects: the part IDs the batch assigned are now theirs.
        one_by_one = [
            await single.append_message(
                item.message, item.parts, part_tokens=item.part_tokens, in_context=item.in_context
            )
            for item in batch
        ]
        assert landed == one_by_one
        assert [a.seq for a in landed[:4]] == [1, 1, 2, 2]
        assert landed[11].position is None
        for store in (batched, single):
            hits = await store.search_text(
                query=SearchQuery(all_of=(Term.word("delta"),)),
                scope="messages",
                where=SearchFilter(session_ids=sessions),
                limit=50,
            )
            assert {h.id for h in hits} == {m.message.id for m in batch[3::5]}
    finally:
        await batched.close()
        await single.close()
    first, second = _dump(locations[0]), _dump(locations[1])
    assert len(first["messages"]) == 24 and len(first["context_items"]) == 23
    assert first == second


async def test_a_batch_is_checked_whole_before_anything_is_written(
    locations: tuple[str, str],
) -> None:
    sessions = [ids.new_id("sess"), ids.new_id("sess")]
    store = await _open(locations[0], sessions)
    try:
        batch = _messages(sessions)
        batch[2].message.agent = "bad\ud800agent"
        with pytest.raises(InvalidArgumentError, match=r"batch\[2\] agent is not valid Unicode"):
            await store.append_batch(batch)
        batch = _messages(sessions)
        batch[20].message.session_id = ids.new_id("sess")
        with pytest.raises(SessionNotFoundError):
            await store.append_batch(batch)
        assert [await store.count_messages(s) for s in sessions] == [0, 0]
    finally:
        await store.close()


def _broken(change: str) -> NewMessage:
    sid = ids.new_id("sess")
    item = _messages([sid, sid])[1]
    message, part = item.message, item.parts[-1]
    if change == "empty id":
        message.id = ""
    elif change == "nul session":
        message.session_id = "sess\x00x"
    elif change == "negative estimate":
        message.token_estimate = -1
    elif change == "bool estimate":
        message.token_estimate = True
    elif change == "huge created_at":
        message.created_at = 2**63
    elif change == "surrogate model":
        message.model_id = "m\udfff"
    elif change == "empty part id":
        part.id = ""
    elif change == "not a part":
        return NewMessage(message, ["text"], None)  # type: ignore[list-item]
    elif change == "negative part tokens":
        return NewMessage(message, item.parts, [-1] * len(item.parts))
    elif change == "float part tokens":
        return NewMessage(message, item.parts, [1.5] * len(item.parts))  # type: ignore[list-item]
    elif change == "nul call id":
        assert isinstance(part, ToolPart)
        part.tool_call_id = "call\x00"
    elif change == "float timestamp":
        assert isinstance(part, ToolPart)
        part.status.completed_at = 1.5  # type: ignore[assignment]
    return item


@pytest.mark.parametrize(
    "change",
    [
        "empty id",
        "nul session",
        "negative estimate",
        "bool estimate",
        "huge created_at",
        "surrogate model",
        "empty part id",
        "not a part",
        "negative part tokens",
        "float part tokens",
        "nul call id",
        "float timestamp",
    ],
)
def test_the_batch_check_rejects_what_the_message_check_rejects(change: str) -> None:
    item = _broken(change)
    with pytest.raises(InvalidArgumentError) as single:
        check_new_message(item, "batch[0]")
    with pytest.raises(InvalidArgumentError) as batch:
        check_new_messages([item])
    assert str(batch.value) == str(single.value)


def test_the_batch_check_accepts_well_formed_messages() -> None:
    batch = _messages([ids.new_id("sess"), ids.new_id("sess")])
    assert check_new_messages(batch) is batch


def test_the_ten_bit_id_encoding_gives_the_five_bit_encodings_characters() -> None:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

    def five_bits(value: int, length: int) -> str:
        return "".join(alphabet[(value >> (5 * i)) & 31] for i in reversed(range(length)))

    rng = random.Random(7)
    for value in [0, 1, 2**128 - 1, 2**130 - 1] + [rng.getrandbits(130) for _ in range(2000)]:
        for length in (1, 2, 13, 26):
            assert ids._encode(value, length) == five_bits(value, length)


def _shape(messages: list[Any]) -> list[Any]:
    """Messages without their IDs: role, time and each part's content and state."""
    out = []
    for m in messages:
        parts = []
        for p in m.parts:
            data = p.model_dump(exclude={"id"})
            parts.append(data)
        out.append((m.message.role, m.message.created_at, m.message.token_estimate, parts))
    return out


@pytest.mark.parametrize("name", ["claude_code.jsonl", "codex_rollout.jsonl", "generic.jsonl"])
async def test_an_import_cut_into_one_message_batches_stores_the_same(
    tmp_path: Path, name: str
) -> None:
    shapes = []
    for batch_size in (1, 5000):
        store = await ImmutableStore.open(str(tmp_path / f"b{batch_size}.db"))
        try:
            report = await import_file(store, str(SAMPLES / name), batch_size=batch_size)
            shapes.append(
                (
                    report.messages_added,
                    report.errors,
                    report.orphan_results,
                    [_shape(await store.get_messages(s)) for s in report.session_ids],
                )
            )
        finally:
            await store.close()
    assert shapes[0] == shapes[1]
