"""The bad-input catalogue: every rejected call names its problem with a typed
error from :mod:`mnesis.errors` and leaves the store exactly as it was.

The store is a copy of two compacted sessions (A, loaded; B, another session of the
same file, with its own summary, messages and tool calls) and a pending tool call in
A. Each case runs one call; a digest of every row of every table (the full-text
index's shadow tables included) is taken before and after and must not change, and
the checker must still find nothing. Unusual but valid input (full-text and SQL
metacharacters in a query, NUL and lone surrogates in message text) is accepted and
kept exactly.

The conditions of the database itself (a file that is not a database, a read-only
file, a full disk) and the command line are catalogued the same way.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mnesis import MnesisSession, StorePool, TextPart, ToolPart
from mnesis.cli import app
from mnesis.errors import (
    InvalidArgumentError,
    MessageNotFoundError,
    MnesisError,
    MnesisStoreError,
    OutOfScopeError,
    PartNotFoundError,
    SessionNotFoundError,
    StoreCorruptError,
    StoreFullError,
    StoreReadOnlyError,
    SummaryNotFoundError,
)
from mnesis.integrity import (
    IntegrityChecker,
    RepairAction,
    RepairPlan,
    apply_repairs,
    plan_repairs,
)
from mnesis.llm import FakeLLM, Respond, ToolCall
from mnesis.store.immutable import ImmutableStore
from mnesis.testing import SESSIONS, generate, replay
from tests.backends import store_copy, template_location
from tests.compaction import run_in_fresh_loop, small_window_config
from tests.integrity.checksums import database_checksum
from tests.integrity.faults import last_message_dropped
from tests.integrity.tampering import tampering
from tests.integrity.template import copy_database
from tests.store.sqlite.helpers import sqlite_db

UNKNOWN_SESSION = "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"
UNKNOWN_SUMMARY = "sum_01ARZ3NDEKTSV4RRFFQ69G5FAV"
UNKNOWN_MESSAGE = "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV"
CONFIG = small_window_config(auto=False)


@dataclass(frozen=True)
class Stored:
    """The template: what it holds and where."""

    db_path: str
    session_id: str
    summary_id: str
    other_session_id: str
    other_summary_id: str
    other_message_id: str
    other_tool_call_id: str


@dataclass
class Files:
    """A private copy of the template, in its own directory."""

    db_path: str
    tmp: Path
    stored: Stored


@dataclass
class World(Files):
    """A private copy of the template with session A loaded."""

    pool: StorePool
    session: MnesisSession

    @property
    def api(self) -> Any:
        """The session, untyped: the catalogue passes what the signatures forbid."""
        return self.session

    @property
    def store(self) -> ImmutableStore:
        return self.session.store


@pytest.fixture(scope="module")
def stored(backend: str, request: pytest.FixtureRequest) -> Iterator[Stored]:
    with template_location(backend, request, "catalogue") as path:
        yield _build(path)


def _build(path: str) -> Stored:
    async def build() -> Stored:
        pool = StorePool()
        try:
            llm = FakeLLM()
            a = await MnesisSession.create(
                model="fake/a", db_path=path, pool=pool, llm=llm, config=CONFIG
            )
            await replay(a, generate(SESSIONS["bugfix_sprint"]), stop=20)
            a_summary = (await a.compact()).summary_id
            llm.script(Respond("checking", tool_calls=(ToolCall("call_1", "bash", {"cmd": "ls"}),)))
            await a.send("list the files")
            await a.close()
            b = await MnesisSession.create(
                model="fake/b", db_path=path, pool=pool, llm=FakeLLM(), config=CONFIG
            )
            replayed = await replay(b, generate(SESSIONS["webapp_auth"]), stop=20)
            b_summary = (await b.compact()).summary_id
            b_call = next(
                p.tool_call_id
                for parts in replayed.parts_by_message.values()
                for p in parts
                if isinstance(p, ToolPart)
            )
            await b.close()
        finally:
            await pool.close_all()
        assert a_summary and b_summary
        return Stored(path, a.id, a_summary, b.id, b_summary, replayed.message_ids[0], b_call)

    return run_in_fresh_loop(build)


@pytest.fixture
async def world(
    stored: Stored, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[World]:
    with store_copy(stored.db_path, request) as db_path:
        pool = StorePool()
        session = await MnesisSession.load(
            stored.session_id, config=CONFIG, db_path=db_path, pool=pool, llm=FakeLLM()
        )
        yield World(db_path, tmp_path, stored, pool, session)
        await session.close()
        await pool.close_all()


# -- the public API -------------------------------------------------------------------
Call = Callable[[World], Awaitable[object]]


@dataclass(frozen=True)
class Case:
    name: str
    call: Call
    error: type[MnesisError]
    match: str | None = None


def _create(w: World, **kwargs: Any) -> Awaitable[MnesisSession]:
    kwargs.setdefault("model", "fake/new")
    return MnesisSession.create(db_path=w.db_path, pool=w.pool, llm=FakeLLM(), **kwargs)


def _load(w: World, session_id: Any) -> Awaitable[MnesisSession]:
    return MnesisSession.load(session_id, config=CONFIG, db_path=w.db_path, pool=w.pool)


def _check(w: World, session_id: Any) -> Awaitable[object]:
    return IntegrityChecker(w.store).run(session_id)


def _tool(**fields: Any) -> list[dict[str, Any]]:
    return [{"type": "tool", "tool_name": "bash", "tool_call_id": "call_9", **fields}]


def _repair(w: World, actions: list[tuple[str, str]], backup: str = "backup.db") -> Awaitable[Any]:
    plan = RepairPlan(
        actions=[
            RepairAction(action=kind, session_id=w.stored.session_id, target_id=target, reason="t")
            for kind, target in actions
        ]
    )
    return apply_repairs(w.store, plan, backup_path=str(w.tmp / backup) if backup else backup)


def _repair_to(w: World, backup_path: str) -> Awaitable[Any]:
    return apply_repairs(w.store, RepairPlan(), backup_path=backup_path)


def _existing_file(w: World) -> str:
    path = w.tmp / "precious.db"
    if w.stored.db_path.startswith("postgresql://"):
        path.write_bytes(b"somebody's other backup\n")
    else:
        copy_database(w.stored.db_path, str(path))  # somebody's other database
    return str(path)


API_CASES = [
    # wrong types
    Case("wrong type: model is an int", lambda w: _create(w, model=42), InvalidArgumentError),
    Case("wrong type: session ID is an int", lambda w: _load(w, 42), InvalidArgumentError),
    Case(
        "wrong type: user message is an int",
        lambda w: w.api.record(42, "x"),
        InvalidArgumentError,
    ),
    Case("wrong type: message is bytes", lambda w: w.api.send(b"hello"), InvalidArgumentError),
    Case("wrong type: query is a list", lambda w: w.api.grep(["x"]), InvalidArgumentError),
    Case("wrong type: limit is a str", lambda w: w.api.grep("x", limit="9"), InvalidArgumentError),
    Case(
        "wrong type: since is a str",
        lambda w: w.api.grep("x", since="today"),
        InvalidArgumentError,
    ),
    Case("wrong type: describe(None)", lambda w: w.api.describe(None), InvalidArgumentError),
    Case(
        "wrong type: depth is a float",
        lambda w: w.api.expand(w.stored.summary_id, depth=1.5),
        InvalidArgumentError,
    ),
    Case(
        "wrong type: tool output is an int",
        lambda w: w.api.complete_tool_call("call_1", output=42),
        InvalidArgumentError,
    ),
    Case("wrong type: check(42)", lambda w: _check(w, 42), InvalidArgumentError),
    # empty values
    Case("empty: user message", lambda w: w.api.record("", "x"), InvalidArgumentError),
    Case("empty: whitespace message", lambda w: w.api.send(" \n\t"), InvalidArgumentError),
    Case("empty: parts list", lambda w: w.api.record("q", []), InvalidArgumentError),
    Case("empty: query", lambda w: w.api.grep(""), InvalidArgumentError),
    Case("empty: describe ID", lambda w: w.api.describe(""), InvalidArgumentError),
    Case("empty: expand ID", lambda w: w.api.expand(""), InvalidArgumentError),
    Case("empty: session ID", lambda w: _load(w, ""), InvalidArgumentError),
    Case("empty: checked session ID", lambda w: _check(w, ""), InvalidArgumentError),
    Case("empty: model", lambda w: _create(w, model=""), InvalidArgumentError),
    Case(
        "empty: tool call ID",
        lambda w: w.api.complete_tool_call("", output="x"),
        InvalidArgumentError,
    ),
    Case("empty: backup path", lambda w: _repair_to(w, ""), InvalidArgumentError),
    # huge and out-of-range values
    Case("huge: 100k-character query", lambda w: w.api.grep("x" * 100_000), InvalidArgumentError),
    Case(
        "huge: 10k-character session ID",
        lambda w: _load(w, "sess_" + "0" * 10_000),
        InvalidArgumentError,
    ),
    Case("huge: since=10**30", lambda w: w.api.grep("test", since=10**30), InvalidArgumentError),
    Case("huge: since=inf", lambda w: w.api.grep("test", since=math.inf), InvalidArgumentError),
    Case("huge: since=nan", lambda w: w.api.grep("test", since=math.nan), InvalidArgumentError),
    Case("out of range: limit=0", lambda w: w.api.grep("x", limit=0), InvalidArgumentError),
    Case(
        "out of range: depth=0",
        lambda w: w.api.expand(w.stored.summary_id, depth=0),
        InvalidArgumentError,
    ),
    Case(
        "out of range: token_cap=-1",
        lambda w: w.api.expand(w.stored.summary_id, token_cap=-1),
        InvalidArgumentError,
    ),
    # malformed IDs
    Case("malformed: sess_123", lambda w: _load(w, "sess_123"), InvalidArgumentError),
    Case(
        "malformed: lowercase ULID",
        lambda w: _load(w, UNKNOWN_SESSION.lower()),
        InvalidArgumentError,
    ),
    Case(
        "malformed: I is not Crockford base32",
        lambda w: _check(w, "sess_" + "I" * 26),
        InvalidArgumentError,
    ),
    Case(
        "malformed: a message ID where a session ID goes",
        lambda w: _check(w, UNKNOWN_MESSAGE),
        InvalidArgumentError,
    ),
    Case(
        "unknown: a message ID to expand (expand opens a message's leaf)",
        lambda w: w.api.expand(UNKNOWN_MESSAGE),
        MessageNotFoundError,
    ),
    Case("malformed: sum_!!", lambda w: w.api.describe("sum_!!"), InvalidArgumentError),
    Case("malformed: parent ID", lambda w: _create(w, parent_id="sess_x"), InvalidArgumentError),
    # unknown IDs and IDs of another session
    Case("unknown: session", lambda w: _load(w, UNKNOWN_SESSION), SessionNotFoundError),
    Case("unknown: checked session", lambda w: _check(w, UNKNOWN_SESSION), SessionNotFoundError),
    Case(
        "unknown: parent session",
        lambda w: _create(w, parent_id=UNKNOWN_SESSION),
        SessionNotFoundError,
    ),
    Case("unknown: summary", lambda w: w.api.describe(UNKNOWN_SUMMARY), SummaryNotFoundError),
    Case(
        "unknown: tool call",
        lambda w: w.api.complete_tool_call("call_404", output="x"),
        PartNotFoundError,
    ),
    Case(
        "other session: describe its summary",
        lambda w: w.api.describe(w.stored.other_summary_id),
        OutOfScopeError,
    ),
    Case(
        "other session: expand its summary",
        lambda w: w.api.expand(w.stored.other_summary_id),
        OutOfScopeError,
    ),
    Case(
        "other session: describe its message",
        lambda w: w.api.describe(w.stored.other_message_id),
        OutOfScopeError,
    ),
    Case(
        "other session: grep under its summary",
        lambda w: w.api.grep("x", summary_id=w.stored.other_summary_id),
        OutOfScopeError,
    ),
    Case(
        "other session: complete its tool call",
        lambda w: w.api.complete_tool_call(w.stored.other_tool_call_id, output="x"),
        PartNotFoundError,
    ),
    # SQL and full-text metacharacters
    Case("sql: session ID", lambda w: _load(w, "sess_' OR '1'='1"), InvalidArgumentError),
    Case("sql: checked session ID", lambda w: _check(w, "sess_%"), InvalidArgumentError),
    Case(
        "sql: summary ID",
        lambda w: w.api.describe("sum_'; DROP TABLE summaries; --"),
        InvalidArgumentError,
    ),
    Case(
        "sql: tool call ID",
        lambda w: w.api.complete_tool_call("call_1' OR '1'='1", output="x"),
        PartNotFoundError,
    ),
    Case(
        "regex: unbalanced parenthesis",
        lambda w: w.api.grep("(", mode="regex"),
        InvalidArgumentError,
    ),
    Case("regex: bad range", lambda w: w.api.grep("[z-a]", mode="regex"), InvalidArgumentError),
    # NUL and lone surrogates where text must be plain
    Case("nul: session ID", lambda w: _load(w, "sess_\x00" + "0" * 25), InvalidArgumentError),
    Case(
        "nul: database path",
        lambda w: MnesisSession.create(model="fake/x", db_path=w.db_path + "\x00x"),
        InvalidArgumentError,
    ),
    Case("surrogate: summary ID", lambda w: w.api.describe("sum_\ud800"), InvalidArgumentError),
    Case("surrogate: checked session ID", lambda w: _check(w, "sess_\udcff"), InvalidArgumentError),
    Case("surrogate: model", lambda w: _create(w, model="fake/\ud800"), InvalidArgumentError),
    Case(
        "surrogate: system prompt",
        lambda w: _create(w, system_prompt="be \udcff"),
        InvalidArgumentError,
    ),
    # invalid JSON in tool inputs
    Case(
        "json: tool input is a JSON string",
        lambda w: w.api.record("q", _tool(input="{not json")),
        InvalidArgumentError,
    ),
    Case(
        "json: tool input holds NaN",
        lambda w: w.api.record("q", _tool(input={"x": math.nan})),
        InvalidArgumentError,
    ),
    Case(
        "json: tool input holds a set",
        lambda w: w.api.record(
            "q", [ToolPart(tool_name="bash", tool_call_id="c", input={"x": {1}})]
        ),
        InvalidArgumentError,
    ),
    Case(
        "json: tool input is a list",
        lambda w: w.api.record("q", _tool(input=[1, 2])),
        InvalidArgumentError,
    ),
    Case(
        "json: tools is not a list",
        lambda w: w.api.send("q", tools="{not json"),
        InvalidArgumentError,
    ),
    # repairs
    Case(
        "repair: an unknown message",
        lambda w: _repair(w, [("rederive_tokens", UNKNOWN_MESSAGE)]),
        MessageNotFoundError,
    ),
    Case(
        "repair: a plan failing half-way",
        lambda w: _repair(
            w, [("rebuild_context", w.stored.session_id), ("rederive_tokens", UNKNOWN_MESSAGE)]
        ),
        MessageNotFoundError,
    ),
    Case(
        "repair: backup onto the database itself",
        lambda w: _repair_to(w, w.db_path),
        InvalidArgumentError,
    ),
    Case(
        "repair: backup onto an existing file",
        lambda w: _repair_to(w, _existing_file(w)),
        InvalidArgumentError,
        "precious.db",
    ),
    Case(
        "repair: backup in a missing directory",
        lambda w: _repair_to(w, str(w.tmp / "no" / "b.db")),
        MnesisStoreError,
        "no/b.db",
    ),
]


class TestThePublicAPIRejectsBadInput:
    @pytest.mark.parametrize("case", API_CASES, ids=[c.name for c in API_CASES])
    async def test_a_typed_error_and_the_store_unchanged(self, world: World, case: Case) -> None:
        before = database_checksum(world.db_path)
        with pytest.raises(case.error, match=case.match) as raised:
            await case.call(world)
        assert str(raised.value)
        assert database_checksum(world.db_path) == before
        assert (await IntegrityChecker(world.store, check_tokens=True).run()).ok

    async def test_the_session_works_after_every_rejection(self, world: World) -> None:
        for case in API_CASES:
            with contextlib.suppress(Exception):  # untyped errors fail their own case
                await case.call(world)
        recorded = await world.session.record("still here?", "yes")
        assert recorded.user_message_id
        assert (await IntegrityChecker(world.store, check_tokens=True).run()).ok


@dataclass(frozen=True)
class Accepted:
    name: str
    call: Call
    writes: bool = False


def _grep(query: str, mode: str = "full_text") -> Call:
    return lambda w: w.api.grep(query, mode=mode)


ACCEPTED = [
    *(
        Accepted(f"full-text metacharacters: {q!r}", _grep(q))
        for q in (
            '"unbalanced',
            "NEAR(a b",
            "a OR",
            "*",
            "col:value",
            "^x",
            "a AND NOT b",
            "()",
            "-",
            '""',
            "%_",
            "\\",
        )
    ),
    Accepted("sql in a query", _grep("'; DROP TABLE messages; --")),
    Accepted("nul in a query", _grep("a\x00b")),
    Accepted("lone surrogate in a query", _grep("\ud800")),
    Accepted("lone surrogate in a regex", _grep("\ud800", "regex")),
    Accepted("huge limit (clamped)", lambda w: w.api.grep("test", limit=10**30)),
    Accepted("huge token cap", lambda w: w.api.expand(w.stored.summary_id, token_cap=10**30)),
    Accepted(
        "tool arguments that are not JSON (an error for the model)",
        lambda w: w.api.execute_tool("lcm_grep", "{not json"),
    ),
    Accepted("nul in message text", lambda w: w.api.record("a\x00b", "c\x00d"), writes=True),
    Accepted(
        "lone surrogates in message text",
        lambda w: w.api.record("a\ud800b", "c\udcffd"),
        writes=True,
    ),
    Accepted(
        "sql in message text",
        lambda w: w.api.record("'); DROP TABLE messages; --", "ok"),
        writes=True,
    ),
    Accepted("a 2 MB message", lambda w: w.api.record("x" * 2_000_000, "ok"), writes=True),
]


class TestUnusualButValidInputIsAccepted:
    @pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
    async def test_it_succeeds_and_the_store_stays_whole(
        self, world: World, case: Accepted
    ) -> None:
        before = database_checksum(world.db_path)
        result = await case.call(world)
        if isinstance(result, str):  # an agent tool: errors are reported to the model
            assert '"error"' in result
        assert (database_checksum(world.db_path) != before) == case.writes
        assert (await IntegrityChecker(world.store, check_tokens=True).run()).ok

    async def test_nul_and_lone_surrogates_come_back_exactly(self, world: World) -> None:
        recorded = await world.session.record("a\x00b\ud800", [TextPart(text="\udcff\x00")])
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=world.db_path)
            user = await store.get_message(recorded.user_message_id)
            reply = await store.get_message(recorded.assistant_message_id)
            await store.close()
        finally:
            await pool.close_all()
        assert [p.text for p in user.parts] == ["a\x00b\ud800"]  # type: ignore[union-attr]
        assert [p.text for p in reply.parts] == ["\udcff\x00"]  # type: ignore[union-attr]


# -- the database itself ------------------------------------------------------------------
Opener = Callable[[str, str], Awaitable[object]]


async def _open_store(path: str, _session_id: str) -> object:
    pool = StorePool()
    try:
        return await pool.acquire(db_path=path)
    finally:
        await pool.close_all()


async def _open_session(path: str, session_id: str) -> object:
    return await MnesisSession.load(session_id, db_path=path, pool=StorePool())


async def _new_session(path: str, _session_id: str) -> object:
    return await MnesisSession.create(model="fake/x", db_path=path, pool=StorePool())


async def _check_file(path: str, _session_id: str) -> object:
    pool = StorePool()
    try:
        return await IntegrityChecker(await pool.acquire(db_path=path)).run()
    finally:
        await pool.close_all()


OPENERS: dict[str, Opener] = {
    "StorePool.acquire": _open_store,
    "MnesisSession.load": _open_session,
    "MnesisSession.create": _new_session,
    "IntegrityChecker.run": _check_file,
}
NOT_DATABASES: dict[str, bytes] = {
    "text notes": b"these are my notes, not a database\n" * 200,
    "random bytes": bytes(range(256)) * 64,
    "a truncated SQLite header": b"SQLite format 3\x00" + b"\x00" * 50,
}


@pytest.mark.sqlite_only("a file that is not a SQLite database")
class TestAFileThatIsNotADatabase:
    @pytest.mark.parametrize("content", NOT_DATABASES.values(), ids=NOT_DATABASES.keys())
    @pytest.mark.parametrize("opener", OPENERS.values(), ids=OPENERS.keys())
    async def test_is_refused_as_corrupt_and_left_alone(
        self, tmp_path: Path, opener: Opener, content: bytes
    ) -> None:
        path = tmp_path / "notes.db"
        path.write_bytes(content)
        with pytest.raises(StoreCorruptError):
            await opener(str(path), UNKNOWN_SESSION)
        assert path.read_bytes() == content
        assert _names(tmp_path) == ["notes.db"]


@dataclass
class ReadOnly:
    db_path: str
    session_id: str

    def lock(self) -> None:
        done = subprocess.run(["chattr", "+i", self.db_path], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip("cannot make a file read-only for root here (chattr +i failed)")

    def unlock(self) -> None:
        subprocess.run(["chattr", "-i", self.db_path], capture_output=True, check=False)


@pytest.fixture
def read_only(stored: Stored, tmp_path: Path) -> Any:
    """A copy of the template with one context item dropped, made immutable."""
    path = copy_database(stored.db_path, str(tmp_path / "readonly.db"))
    with tampering(path) as conn:
        last_message_dropped(conn, stored.session_id)
    if os.geteuid() != 0:
        os.chmod(path, 0o444)
        yield ReadOnly(path, stored.session_id)
        return
    locked = ReadOnly(path, stored.session_id)
    locked.lock()
    yield locked
    locked.unlock()


async def _ro_record(s: MnesisSession, _tmp: Path) -> object:
    return await s.record("q", "a")


async def _ro_send(s: MnesisSession, _tmp: Path) -> object:
    return await s.send("q")


async def _ro_stream(s: MnesisSession, _tmp: Path) -> object:
    return [item async for item in s.stream("q")]


async def _ro_child(s: MnesisSession, _tmp: Path) -> object:
    return await s.spawn_child(agent="helper", system_prompt="help")


async def _ro_repair(s: MnesisSession, tmp: Path) -> object:
    report = await IntegrityChecker(s.store).run()
    assert not report.ok
    return await apply_repairs(s.store, plan_repairs(report), backup_path=str(tmp / "b.db"))


WRITES: dict[str, Callable[[MnesisSession, Path], Awaitable[object]]] = {
    "record": _ro_record,
    "send": _ro_send,
    "stream": _ro_stream,
    "spawn_child": _ro_child,
    "apply_repairs": _ro_repair,
}


@pytest.mark.sqlite_only("makes the database file immutable (chattr +i)")
class TestAReadOnlyDatabase:
    @pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
    async def test_reads_work_and_writes_raise_store_read_only(
        self, read_only: ReadOnly, tmp_path: Path, write: Callable[..., Awaitable[object]]
    ) -> None:
        before = database_checksum(read_only.db_path)
        pool = StorePool()
        try:
            session = await MnesisSession.load(
                read_only.session_id, config=CONFIG, db_path=read_only.db_path, pool=pool
            )
            report = await IntegrityChecker(session.store).run()
            assert report.by_kind() == {"lost_from_view": 1}
            with pytest.raises(StoreReadOnlyError):
                await write(session, tmp_path)
            assert (await session.compact()).level_used == 0  # compaction reports, never raises
            await session.close()
        finally:
            await pool.close_all()
        assert database_checksum(read_only.db_path) == before


def _fill_up(store: ImmutableStore) -> Awaitable[object]:
    """Make the database 'full': no page beyond the ones it has."""
    return sqlite_db(store).write(
        lambda c: c.execute(
            "PRAGMA max_page_count = " + str(c.execute("PRAGMA page_count").fetchone()[0])
        ).fetchone()
    )


def _make_room(store: ImmutableStore) -> Awaitable[object]:
    return sqlite_db(store).write(
        lambda c: c.execute("PRAGMA max_page_count = 1073741823").fetchone()
    )


BIG = "a long tool log line that does not compress into existing pages\n" * 4_000
FULL_DISK_WRITES: dict[str, Call] = {
    "record": lambda w: w.api.record(BIG, BIG),
    # A quarter of BIG: it fits the model's budget (a message that never could is
    # refused with ContextOverflowError before anything is written).
    "send": lambda w: w.api.send(BIG[: len(BIG) // 4]),
    "record with a tool call": lambda w: w.api.record(
        "q", [ToolPart(tool_name="bash", tool_call_id="c", input={"cmd": "cat"}, output=BIG)]
    ),
    "complete a tool call": lambda w: w.api.complete_tool_call("call_1", output=BIG),
    "spawn a child": lambda w: w.api.spawn_child(agent="helper", system_prompt=BIG),
}


@pytest.mark.sqlite_only("fills the disk through SQLite's max_page_count")
class TestAFullDisk:
    @pytest.mark.parametrize("write", FULL_DISK_WRITES.values(), ids=FULL_DISK_WRITES.keys())
    async def test_a_write_raises_store_full_and_nothing_is_half_written(
        self, world: World, write: Call
    ) -> None:
        await _fill_up(world.store)
        before = database_checksum(world.db_path)
        with pytest.raises(StoreFullError):
            await write(world)
        assert database_checksum(world.db_path) == before
        result = await world.session.compact()
        assert result.level_used == 0 and result.error
        assert database_checksum(world.db_path) == before
        assert (await IntegrityChecker(world.store, check_tokens=True).run()).ok
        await _make_room(world.store)
        assert (await world.session.record("room again?", "yes")).assistant_message_id
        assert (await IntegrityChecker(world.store, check_tokens=True).run()).ok


# -- the command line -------------------------------------------------------------------
@dataclass(frozen=True)
class CliCase:
    name: str
    args: Callable[[Files], list[str]]
    exit_code: int
    message: str


def _notes(w: Files) -> str:
    path = w.tmp / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 100)
    return str(path)


CLI_CASES = [
    CliCase("check: not a database", lambda w: ["check", "--db", _notes(w)], 1, "not a database"),
    CliCase(
        "check: missing database",
        lambda w: ["check", "--db", str(w.tmp / "none.db")],
        1,
        "no database at",
    ),
    CliCase("check: empty --db", lambda w: ["check", "--db", " "], 2, "--db"),
    CliCase(
        "check: malformed session",
        lambda w: ["check", "--db", w.db_path, "--session", "sess_bad"],
        1,
        "not a session ID",
    ),
    CliCase(
        "check: unknown session",
        lambda w: ["check", "--db", w.db_path, "--session", UNKNOWN_SESSION],
        1,
        "session not found",
    ),
    CliCase(
        "check: sql in the session",
        lambda w: ["check", "--db", w.db_path, "--session", "sess_' OR 1=1 --"],
        1,
        "not a session ID",
    ),
    CliCase(
        "check: a lone surrogate in the session",
        lambda w: ["check", "--db", w.db_path, "--session", "sess_\udcff"],
        1,
        "not a session ID",
    ),
    CliCase(
        "check: --backup without --repair",
        lambda w: ["check", "--db", w.db_path, "--backup", "b.db"],
        2,
        "--repair",
    ),
    CliCase(
        "check: --backup onto an existing file",
        lambda w: ["check", "--db", w.db_path, "--repair", "--backup", w.db_path],
        1,
        "name a new file",
    ),
    CliCase(
        "check: --tokens with no value taken",
        lambda w: ["check", "--db", w.db_path, "--tokens=yes"],
        2,
        "--tokens",
    ),
    CliCase(
        "show: sql in the session",
        lambda w: ["show", "sess_' OR 1=1 --", "--db", w.db_path],
        1,
        "session not found",
    ),
    CliCase(
        "show: a message ID as the session",
        lambda w: ["show", UNKNOWN_MESSAGE, "--db", w.db_path],
        1,
        "session",
    ),
    CliCase(
        "context: a lone surrogate in the session",
        lambda w: ["context", "sess_\udcff", "--db", w.db_path],
        1,
        "",
    ),
    CliCase(
        "sessions: not a database", lambda w: ["sessions", "--db", _notes(w)], 1, "not a database"
    ),
]


@pytest.fixture
def cli_world(stored: Stored, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Files]:
    """A copy of the template for the command line (which opens the store itself)."""
    with store_copy(stored.db_path, request) as db_path:
        yield Files(db_path, tmp_path, stored)


class TestTheCommandLineRejectsBadInput:
    @pytest.mark.parametrize("case", CLI_CASES, ids=[c.name for c in CLI_CASES])
    def test_one_clear_line_an_exit_code_and_the_store_unchanged(
        self, cli_world: Files, case: CliCase
    ) -> None:
        before = database_checksum(cli_world.db_path)
        before_files = _names(cli_world.tmp)
        result = CliRunner().invoke(app, case.args(cli_world))
        assert result.exit_code == case.exit_code, result.output
        assert case.message in result.stderr
        assert result.stdout == ""
        assert "Traceback" not in result.output
        assert isinstance(result.exception, SystemExit)
        assert database_checksum(cli_world.db_path) == before
        created = set(_names(cli_world.tmp)) - set(before_files) - {"notes.db"}
        assert not {n for n in created if n.endswith(".db")}

    @pytest.mark.sqlite_only("makes the database file immutable (chattr +i)")
    def test_repair_of_a_read_only_database_is_one_line_and_exit_1(
        self, read_only: ReadOnly
    ) -> None:
        before = database_checksum(read_only.db_path)
        checked = CliRunner().invoke(app, ["check", "--db", read_only.db_path])
        assert checked.exit_code == 1 and "lost_from_view" in checked.stdout
        backup = str(Path(read_only.db_path).with_name("b.db"))
        repaired = CliRunner().invoke(
            app, ["check", "--db", read_only.db_path, "--repair", "--backup", backup]
        )
        assert repaired.exit_code == 1
        assert "read-only" in repaired.stderr
        assert "Traceback" not in repaired.output
        assert database_checksum(read_only.db_path) == before


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())
