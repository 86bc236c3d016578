"""The per-session hash chain (m011): every change to stored text, order or lineage is
reported by ``check --deep`` as the first broken link; ``mnesis verify`` prints the head
and finds a recorded one again; older files migrate; damaged rows raise typed errors.

Tampering bypasses the store: raw ``sqlite3`` with the append-only triggers dropped for
one transaction (:func:`tests.integrity.tampering.tampering`), the file's own bytes, or
PostgreSQL ``UPDATE`` with the triggers disabled for the session.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from mnesis import MnesisSession, StorePool
from mnesis.cli import app
from mnesis.config import StoreConfig
from mnesis.errors import AppendOnlyViolationError, StoreCorruptError
from mnesis.integrity import IntegrityChecker, ViolationKind
from mnesis.llm import FakeLLM
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.store import SessionRecord
from mnesis.store.base import NewMessage
from mnesis.store.immutable import ImmutableStore
from mnesis.store.postgres import db as postgres_db
from mnesis.store.postgres.migrations import MIGRATIONS as PG_MIGRATIONS
from mnesis.store.readonly import open_read_only
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS
from tests.compaction import run_in_fresh_loop, seed_session, small_window_config
from tests.integrity.tampering import tampering

K = ViolationKind
FIXTURE = "bugfix_sprint"
_BEFORE = [m for m in MIGRATIONS if m[0] != "m011_history_chain"]
_PG_BEFORE = [m for m in PG_MIGRATIONS if m[0] != "m011_history_chain"]


async def _build(db_path: str, pool: StorePool, turns: int = 24) -> str:
    """A compacted session (summaries and lineage) with a tool call settled after it was
    written (a ``part_open`` link and its ``result``)."""
    sid, _ = await seed_session(db_path, pool, FIXTURE, turns)
    session = await MnesisSession.load(
        sid, config=small_window_config(), db_path=db_path, pool=pool, llm=FakeLLM()
    )
    try:
        await session.compact()
    finally:
        await session.close()
    store = await pool.acquire(db_path=db_path)
    call = ToolPart(
        tool_name="read", tool_call_id="call_late", input={"path": "a.py"},
        status=ToolStatus(state="pending"),
    )  # fmt: skip
    message = Message(id=new_id("msg"), session_id=sid, role="assistant", created_at=1)
    (landed,) = await store.append_messages([NewMessage(message, [TextPart(text="ok"), call])])
    await store.update_part_status(landed.part_ids[1], state="completed", output="late output")
    return sid


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    path = str(tmp_path_factory.mktemp("chain") / "template.db")

    async def build() -> str:
        pool = StorePool()
        try:
            return await _build(path, pool)
        finally:
            await pool.close_all()

    return path, run_in_fresh_loop(build)


@pytest.fixture
def copy(template: tuple[str, str], tmp_path: Path) -> tuple[str, str]:
    path = str(tmp_path / "copy.db")
    shutil.copy(template[0], path)
    return path, template[1]


async def _deep(db_path: str, sid: str) -> list[Any]:
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=db_path)
        report = await IntegrityChecker(store, deep=True).run(sid)
        return [v for v in report.violations if v.kind is not K.ENGINE_INTEGRITY]
    finally:
        await pool.close_all()


def _text_parts(db_path: str, sid: str) -> list[tuple[str, bytes]]:
    conn = sqlite3.connect(db_path)
    try:
        return [
            (r[0], bytes(r[1]))
            for r in conn.execute(
                "SELECT id, CAST(text_content AS BLOB) FROM message_parts "
                "WHERE session_id = ? AND text_content IS NOT NULL ORDER BY rowid",
                (sid,),
            )
        ]
    finally:
        conn.close()


def _file(path: str, data: bytes | None = None) -> bytes:
    """The file's bytes; with ``data``, written over them first."""
    if data is not None:
        Path(path).write_bytes(data)
    return Path(path).read_bytes()


def _set_text(db_path: str, part_id: str, raw: bytes) -> None:
    with tampering(db_path, drop_triggers=("message_parts_immutable",)) as conn:
        conn.execute(
            "UPDATE message_parts SET text_content = CAST(? AS TEXT) WHERE id = ?", (raw, part_id)
        )


async def test_an_untouched_session_is_intact_and_every_row_has_a_link(
    copy: tuple[str, str],
) -> None:
    path, sid = copy
    assert await _deep(path, sid) == []
    conn = sqlite3.connect(path)
    kinds = dict(
        conn.execute(
            "SELECT kind, count(*) FROM history_chain WHERE session_id = ? GROUP BY kind", (sid,)
        ).fetchall()
    )
    conn.close()
    assert {"message", "part", "part_open", "result", "summary"} <= set(kinds)


async def test_random_single_byte_changes_in_message_text_are_always_reported(
    copy: tuple[str, str],
) -> None:
    path, sid = copy
    parts = _text_parts(path, sid)
    rng = random.Random(34)
    for _ in range(12):
        part_id, raw = rng.choice(parts)
        at = rng.randrange(len(raw))
        flipped = raw[:at] + bytes([raw[at] ^ rng.randrange(1, 256)]) + raw[at + 1 :]
        _set_text(path, part_id, flipped)
        found = await _deep(path, sid)
        broken = [v for v in found if v.kind is K.CHAIN_BROKEN]
        assert [v.object_id for v in broken] == [part_id], found
        assert "first broken link" in broken[0].detail
        _set_text(path, part_id, raw)
    assert await _deep(path, sid) == []


async def test_bit_flips_in_the_file_bytes_of_a_text_are_reported(copy: tuple[str, str]) -> None:
    path, sid = copy
    rng = random.Random(7)
    original = _file(path)
    # Texts stored once, on one page (a long text continues on overflow pages).
    texts = [
        (pid, raw, at)
        for pid, raw in _text_parts(path, sid)
        if 40 < len(raw) < 1000
        and (at := original.find(raw)) > 0
        and original.find(raw, at + 1) == -1
    ]
    assert len(texts) > 10
    for _ in range(6):
        part_id, raw, at = rng.choice(texts)
        spot = at + rng.randrange(len(raw))
        data = bytearray(original)
        data[spot] ^= 1 << rng.randrange(8)
        _file(path, bytes(data))
        found = await _deep(path, sid)
        named = {v.object_id for v in found if v.kind in (K.CHAIN_BROKEN, K.UNDECODABLE_ROW)}
        assert part_id in named, found
    _file(path, original)


async def test_reordered_and_removed_rows_break_the_chain(copy: tuple[str, str]) -> None:
    path, sid = copy
    path2 = path + ".2.db"
    shutil.copy(path, path2)
    with tampering(path, drop_triggers=("messages_immutable",)) as conn:
        first, second = [r[0] for r in conn.execute(
            "SELECT id FROM messages WHERE session_id = ? ORDER BY seq LIMIT 2", (sid,)
        )]  # fmt: skip
        conn.execute("UPDATE messages SET seq = -1 WHERE id = ?", (first,))
        conn.execute("UPDATE messages SET seq = 1 WHERE id = ?", (second,))
        conn.execute("UPDATE messages SET seq = 2 WHERE id = ?", (first,))
    found = await _deep(path, sid)
    assert [v.object_id for v in found if v.kind is K.CHAIN_BROKEN] == [first], found

    part_id = _text_parts(path2, sid)[5][0]
    with tampering(path2, drop_triggers=("message_parts_no_delete",)) as conn:
        conn.execute("DELETE FROM message_parts WHERE id = ?", (part_id,))
    found = await _deep(path2, sid)
    broken = [v for v in found if v.kind is K.CHAIN_BROKEN]
    assert [v.object_id for v in broken] == [part_id], found
    assert "row it covers is missing" in broken[0].detail


async def test_a_changed_summary_lineage_is_reported(copy: tuple[str, str]) -> None:
    path, sid = copy
    with tampering(path, drop_triggers=("summary_messages_no_delete",)) as conn:
        summary_id, message_id = conn.execute(
            "SELECT sm.summary_id, sm.message_id FROM summary_messages sm JOIN summaries s "
            "ON s.id = sm.summary_id WHERE s.session_id = ? LIMIT 1",
            (sid,),
        ).fetchone()
        conn.execute(
            "DELETE FROM summary_messages WHERE summary_id = ? AND message_id = ?",
            (summary_id, message_id),
        )
    found = await _deep(path, sid)
    assert summary_id in {v.object_id for v in found if v.kind is K.CHAIN_BROKEN}, found


async def test_a_settled_tool_result_is_covered(copy: tuple[str, str]) -> None:
    path, sid = copy
    with tampering(path, drop_triggers=("message_parts_immutable",)) as conn:
        (part_id,) = conn.execute(
            "SELECT row_id FROM history_chain WHERE session_id = ? AND kind = 'result'", (sid,)
        ).fetchone()
        conn.execute(
            "UPDATE message_parts SET content = replace(content, 'late', 'LATE'), "
            "text_content = replace(text_content, 'late', 'LATE') WHERE id = ?",
            (part_id,),
        )
    found = await _deep(path, sid)
    assert [v.object_id for v in found if v.kind is K.CHAIN_BROKEN] == [part_id], found


def test_verify_prints_the_head_and_finds_a_recorded_one_after_the_session_grew(
    copy: tuple[str, str],
) -> None:
    path, sid = copy
    runner = CliRunner()
    first = runner.invoke(app, ["verify", sid, "--db", path, "--format", "json"])
    assert first.exit_code == 0, first.output
    recorded = json.loads(first.output)
    assert recorded["intact"] and len(recorded["head"]) == 64 and recorded["links"] > 100

    async def grow() -> None:
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=path)
            message = Message(id=new_id("msg"), session_id=sid, role="user", created_at=2)
            await store.append_messages([NewMessage(message, [TextPart(text="more")])])
        finally:
            await pool.close_all()

    asyncio.run(grow())
    again = runner.invoke(app, ["verify", sid, "--db", path, "--expect", recorded["head"]])
    assert again.exit_code == 0, again.output
    assert f"found at link {recorded['links']}" in again.output
    assert "grew by 2 links" in again.output
    other = runner.invoke(app, ["verify", sid, "--db", path, "--expect", "ab" * 32, "--json"])
    assert other.exit_code == 1
    assert json.loads(other.output)["expected"] == {"head": "ab" * 32, "link": None, "found": False}
    assert runner.invoke(app, ["verify", sid, "--db", path, "--expect", "xyz"]).exit_code == 2
    parts = _text_parts(path, sid)
    _set_text(path, parts[0][0], parts[0][1] + b"!")
    broken = runner.invoke(app, ["verify", sid, "--db", path])
    assert broken.exit_code == 1 and "BROKEN at link 2 (part" in broken.output


def test_an_older_file_migrates_and_a_read_only_open_still_reads_it(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")

    async def build() -> str:
        pool = StorePool()
        try:
            return await _build(path, pool)
        finally:
            await pool.close_all()

    old = sqlite_database.MIGRATIONS
    sqlite_database.MIGRATIONS = _BEFORE
    try:
        sid = run_in_fresh_loop(build)
    finally:
        sqlite_database.MIGRATIONS = old
    runner = CliRunner()
    # Read-only on the unmigrated file: sessions and check --deep work, say no chain yet.
    assert runner.invoke(app, ["sessions", "--db", path]).exit_code == 0
    checked = runner.invoke(app, ["check", "--session", sid, "--db", path, "--deep", "--json"])
    assert checked.exit_code == 0, checked.output
    assert any("hash chain" in s for s in json.loads(checked.output)["engine_checks_unavailable"])
    unmigrated = runner.invoke(app, ["verify", sid, "--db", path])
    assert unmigrated.exit_code == 1 and "no hash chain yet" in unmigrated.output

    async def reopen() -> tuple[Any, Any]:
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=path)
            return await store.verify_chain(sid), await IntegrityChecker(store, deep=True).run(sid)
        finally:
            await pool.close_all()

    report, check = asyncio.run(reopen())
    assert report.intact and report.head.migrated_links == report.head.links > 100
    assert check.violations == []
    parts = _text_parts(path, sid)
    _set_text(path, parts[3][0], parts[3][1].replace(b"e", b"E", 1))
    assert [v.object_id for v in asyncio.run(_deep(path, sid))] == [parts[3][0]]


async def test_undecodable_text_and_a_damaged_schema_raise_store_corrupt(
    copy: tuple[str, str],
) -> None:
    path, sid = copy
    part_id, raw = _text_parts(path, sid)[0]
    _set_text(path, part_id, b"\xc3" + raw)
    pool = StorePool()
    try:
        store = await pool.acquire(db_path=path)
        with pytest.raises(StoreCorruptError, match="not valid UTF-8") as raised:
            await store.get_messages(sid)
        assert f"message_parts id {part_id}, column text" in str(raised.value)
    finally:
        await pool.close_all()
    named = {v.object_id: v.kind for v in await _deep(path, sid)}
    assert K.UNDECODABLE_ROW in named.values() and named[part_id] is K.CHAIN_BROKEN

    conn = sqlite3.connect(path)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = substr(sql, 1, length(sql) - 8) "
        "WHERE name = 'messages_no_delete'"
    )
    conn.commit()
    conn.close()
    pool = StorePool()
    try:
        with pytest.raises(StoreCorruptError) as raised:
            store = await pool.acquire(db_path=path)
            await store.get_messages(sid)
        assert not isinstance(raised.value, AppendOnlyViolationError)
    finally:
        await pool.close_all()
    ro = open_read_only(StoreConfig(db_path=path))
    with pytest.raises(StoreCorruptError):
        await (await ro).get_session(sid)


# -- PostgreSQL ------------------------------------------------------------------


async def _pg_store(url: str) -> tuple[StorePool, ImmutableStore]:
    pool = StorePool()
    return pool, await pool.acquire(url)


def _pg_tamper(url: str, sql: str, *args: Any) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")  # triggers off, this session
        conn.execute(sql, args)


@pytest.mark.postgres
async def test_postgres_text_changes_are_reported_and_concurrent_writers_chain(
    pg_url: str,
) -> None:
    pool, store = await _pg_store(pg_url)
    try:
        sid = new_id("sess")
        await store.create_session(SessionRecord(id=sid, model="m"))

        async def writer(name: str) -> None:
            for i in range(8):
                m = Message(id=new_id("msg"), session_id=sid, role="user", created_at=i)
                await store.append_messages([NewMessage(m, [TextPart(text=f"{name} {i} é")])])

        other_pool, other = await _pg_store(pg_url)
        try:
            await asyncio.gather(writer("a"), writer("b"), *(
                _other_writer(other, sid, i) for i in range(4)
            ))  # fmt: skip
        finally:
            await other_pool.close_all()
        call = ToolPart(
            tool_name="run", tool_call_id="c1", input={}, status=ToolStatus(state="pending")
        )
        m = Message(id=new_id("msg"), session_id=sid, role="assistant", created_at=200)
        (landed,) = await store.append_messages([NewMessage(m, [call])])
        await store.update_part_status(landed.part_ids[0], state="completed", output="done")
        report = await store.verify_chain(sid)
        assert report.intact and report.head.links == 2 * 16 + 4 * 3 + 3
        with psycopg.connect(pg_url) as conn:
            texts = conn.execute(
                "SELECT id, text_content FROM message_parts WHERE session_id = %s ORDER BY key",
                (sid,),
            ).fetchall()
        rng = random.Random(11)
        for _ in range(3):
            part_id, text = rng.choice(texts)
            at = rng.randrange(len(text))
            changed = text[:at] + chr(ord(text[at]) ^ rng.randrange(1, 32)) + text[at + 1 :]
            _pg_tamper(pg_url, "UPDATE message_parts SET text_content = %s WHERE id = %s",
                       changed, part_id)  # fmt: skip
            found = (await IntegrityChecker(store, deep=True).run(sid)).violations
            assert [v.object_id for v in found if v.kind is K.CHAIN_BROKEN] == [part_id]
            _pg_tamper(pg_url, "UPDATE message_parts SET text_content = %s WHERE id = %s",
                       text, part_id)  # fmt: skip
        assert (await store.verify_chain(sid)).intact
        await store.purge_session(sid)
        with psycopg.connect(pg_url) as conn:
            left = conn.execute("SELECT count(*) FROM history_chain").fetchone()
        assert left == (0,)
    finally:
        await pool.close_all()


async def _other_writer(store: ImmutableStore, sid: str, i: int) -> None:
    """A second process's writer: one message, then a part appended to it later."""
    m = Message(id=new_id("msg"), session_id=sid, role="assistant", created_at=100 + i)
    await store.append_messages([NewMessage(m, [TextPart(text=f"other {i}")])])
    await store.append_parts(m.id, [TextPart(text=f"later {i}")])


@pytest.mark.postgres
async def test_postgres_an_older_database_migrates(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(postgres_db, "MIGRATIONS", _PG_BEFORE)
        pool, store = await _pg_store(pg_url)
        try:
            sid = await _build(pg_url, pool, turns=12)
        finally:
            await pool.close_all()
    pool, store = await _pg_store(pg_url)
    try:
        report = await store.verify_chain(sid)
        assert report.intact and report.head.migrated_links == report.head.links > 30
        with psycopg.connect(pg_url) as conn:
            kinds = {r[0] for r in conn.execute("SELECT DISTINCT kind FROM history_chain")}
        assert kinds == {"message", "part", "summary"}  # the tool call had settled
        m = Message(id=new_id("msg"), session_id=sid, role="user", created_at=3)
        await store.append_messages([NewMessage(m, [TextPart(text="after")])])
        report = await store.verify_chain(sid)
        assert report.intact and report.head.links == report.head.migrated_links + 2
    finally:
        await pool.close_all()
