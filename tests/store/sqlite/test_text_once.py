"""SQLite: each part's text stored once (migration m005), and the writer's neighbour
context identical to what migration m004's trigger computed."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from mnesis.integrity.checker import IntegrityChecker, ViolationKind
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import (
    FileRefPart,
    MessagePart,
    ReasoningPart,
    TextPart,
    ToolPart,
)
from mnesis.store import ImmutableStore, StorePool
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.codec import encode_part
from mnesis.store.sqlite import database as sqlite_database
from mnesis.store.sqlite.migrations import MIGRATIONS
from mnesis.store.sqlite.migrations.m004_search_context import context_sql
from tests.store.sqlite.helpers import indexed_contexts, random_parts, sqlite_db, tokens_of

_WORDS = "alpha beta gamma delta\nepsilon 中文 zeta eta theta".split(" ")


def _message(session_id: str, role: str, at: int) -> Message:
    return Message(id=new_id("msg"), session_id=session_id, role=role, created_at=at)  # type: ignore[arg-type]


def _parts(rng: random.Random) -> list[MessagePart]:
    return random_parts(rng, _WORDS, 400, file_refs=True)


async def _store(path: str, pool: StorePool) -> ImmutableStore:
    return await pool.acquire(db_path=path)


class TestTheWritersContextIsM004s:
    async def test_every_stored_context_equals_the_m004_trigger_expression(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        path = str(tmp_path / "ctx.db")
        store = await _store(path, pool)
        rng = random.Random(16)
        sessions = [new_id("sess") for _ in range(3)]
        for sid in sessions:
            await store.create_session(SessionRecord(id=sid, model="m"))
        second = await StorePool().acquire(db_path=path)
        conn = sqlite3.connect(path)
        # m004's trigger computed a part's context when the part was inserted: compare
        # each write's new parts right after it.
        m004 = (
            "SELECT p.rowid, CASE WHEN p.part_type <> 'tool' THEN "
            f"{context_sql('p')} END FROM message_parts p "
            "WHERE p.text_content IS NOT NULL AND p.rowid > ?"
        )
        seen = 0
        expected: dict[int, str | None] = {}
        try:
            for step in range(240):
                sid = rng.choice(sessions)
                role = rng.choice(["user", "assistant", "tool"])
                at = rng.randrange(-(10**12), 4 * 10**12)
                writer = second if rng.random() < 0.2 else store
                if rng.random() < 0.15:
                    batch = [
                        NewMessage(_message(rng.choice(sessions), role, at), _parts(rng))
                        for _ in range(rng.randrange(1, 5))
                    ]
                    await writer.append_messages(batch)
                elif rng.random() < 0.1 and step:
                    found = await store.get_messages(sid)
                    if found:
                        target = rng.choice(found[-4:]).message.id
                        await writer.append_parts(target, [TextPart(text=f"late {step}")])
                else:
                    await writer.append_message(_message(sid, role, at), _parts(rng))
                expected.update(conn.execute(m004, (seen,)).fetchall())
                seen = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM message_parts").fetchone()[
                    0
                ]
            # What the writer indexed (the column is not stored, m009).
            assert indexed_contexts(conn) == tokens_of(conn, expected)
        finally:
            conn.close()
            await second.close()
        assert len(expected) > 300
        assert sum(1 for c in expected.values() if c and "\n" in c) > 100


def _raw_message(conn: sqlite3.Connection, sid: str, seq: int) -> str:
    """Insert a message row as any program could; its ID."""
    message_id = new_id("msg")
    conn.execute(
        "INSERT INTO messages (id, session_id, seq, role, created_at) "
        "VALUES (?, ?, ?, 'assistant', 0)",
        (message_id, sid, seq),
    )
    return message_id


def _full_json_part(
    conn: sqlite3.Connection, message_id: str, sid: str, ordinal: int, part: MessagePart
) -> str:
    """Insert a part as the library before m005 stored it (full JSON); its ID."""
    row = encode_part(part)
    part_id = new_id("part")
    conn.execute(
        "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, content, "
        "text_content, tool_name, tool_call_id, tool_state, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
        (
            part_id,
            message_id,
            sid,
            ordinal,
            row["part_type"],
            row["content"],
            row["text_content"],
            row["tool_name"],
            row["tool_call_id"],
            row["tool_state"],
        ),
    )
    return part_id


_AWKWARD = [
    "plain words",
    "a\x00b",
    "lone \ud800",
    "中文文本",
    "x" * 200_000,
    'é\n\t"{}\\ and more',
]


class TestMigration:
    async def test_m005_rewrites_existing_parts_exactly_and_restores_the_guard(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = str(tmp_path / "old.db")
        with monkeypatch.context() as patch:
            patch.setattr(sqlite_database, "MIGRATIONS", MIGRATIONS[:4])
            old = StorePool()
            store = await old.acquire(db_path=path)
            sid = new_id("sess")
            await store.create_session(SessionRecord(id=sid, model="m"))
            await old.close_all()
        conn = sqlite3.connect(path)
        guard = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'message_parts_immutable'"
        ).fetchone()[0]
        originals: dict[str, MessagePart] = {}
        with conn:
            for seq, text in enumerate(_AWKWARD, 1):
                message_id = _raw_message(conn, sid, seq)
                parts: list[MessagePart] = [
                    TextPart(text=text),
                    ReasoningPart(text=text),
                    ToolPart(tool_name="t", tool_call_id="c", input={"q": text}, output=text),
                    FileRefPart(content_id="c", path="p", exploration_summary=text),
                ]
                for ordinal, part in enumerate(parts):
                    part_id = _full_json_part(conn, message_id, sid, ordinal, part)
                    originals[part_id] = part
        before = dict(conn.execute("SELECT id, length(content) FROM message_parts"))
        conn.close()

        pool = StorePool()
        try:
            store = await pool.acquire(db_path=path)
            for message in await store.get_messages(sid):
                for part in message.parts:
                    assert part.model_dump(exclude={"id"}) == originals[part.id or ""].model_dump(
                        exclude={"id"}
                    )
        finally:
            await pool.close_all()
        conn = sqlite3.connect(path)
        after = dict(conn.execute("SELECT id, length(content) FROM message_parts"))
        assert (
            conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = 'message_parts_immutable'"
            ).fetchone()[0]
            == guard
        )
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE message_parts SET content = content || ' '")
        conn.close()
        # Every row is rewritten in the minimal form (no ``type``, no defaults); the text
        # the index holds verbatim is also left out, so the 200,000-character values of
        # the text, reasoning and file-summary parts are gone (a tool's output too).
        assert all(after[k] < before[k] for k in after)
        assert sum(after.values()) < sum(before.values()) - 3 * 200_000


class TestTextStoredOnce:
    async def test_a_new_part_does_not_repeat_its_text_in_the_json(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        path = str(tmp_path / "once.db")
        store = await _store(path, pool)
        sid = new_id("sess")
        await store.create_session(SessionRecord(id=sid, model="m"))
        text = "the walrus sunbathes on the rocks " * 20
        await store.append_message(
            _message(sid, "assistant", 0),
            [
                TextPart(text=text),
                ToolPart(tool_name="cat", tool_call_id="c", input={}, output=text),
            ],
        )
        conn = sqlite3.connect(path)
        rows = conn.execute("SELECT content, text_content FROM message_parts").fetchall()
        conn.close()
        assert len(rows) == 2
        for content, text_content in rows:
            assert "walrus" in text_content
            assert "walrus" not in content


class TestNeighbourCache:
    async def test_consecutive_appends_of_one_store_read_the_neighbours_once(
        self, tmp_path: Path, pool: StorePool
    ) -> None:
        store = await _store(str(tmp_path / "cache.db"), pool)
        sid = new_id("sess")
        await store.create_session(SessionRecord(id=sid, model="m"))
        log: list[str] = []
        await sqlite_db(store).read(lambda conn: conn.set_trace_callback(log.append))
        for turn in range(6):
            await store.append_message(_message(sid, "user", 0), [TextPart(text=f"t {turn}")])
        first = await store.get_messages(sid)
        await store.append_parts(first[0].message.id, [TextPart(text="late")])
        await store.append_message(_message(sid, "user", 0), [TextPart(text="after")])
        await sqlite_db(store).read(lambda conn: conn.set_trace_callback(None))
        reads = [s for s in log if s.startswith("SELECT nm.seq, nm.role")]
        # The first append and the two after another write of parts (append_parts
        # reads them itself, then the next append distrusts the cache once).
        assert len(reads) == 3


class TestOlderRowsInANewerFile:
    async def test_full_and_marked_json_rows_decode_and_pass_the_deep_check(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = str(tmp_path / "mixed.db")
        # Rows of a file written before the hash chain (m011 chains them when it opens).
        with monkeypatch.context() as patch:
            before_chain = [m for m in MIGRATIONS if m[0] != "m011_history_chain"]
            patch.setattr(sqlite_database, "MIGRATIONS", before_chain)
            pool = StorePool()
            store = await pool.acquire(db_path=path)
            sid = new_id("sess")
            await store.create_session(SessionRecord(id=sid, model="m"))
            await pool.close_all()
        conn = sqlite3.connect(path)
        originals: dict[str, MessagePart] = {}
        with conn:
            for seq, text in enumerate(_AWKWARD, 1):
                message_id = _raw_message(conn, sid, seq)
                parts: list[MessagePart] = [TextPart(text=text), ReasoningPart(text=text)]
                for ordinal, part in enumerate(parts):
                    originals[_full_json_part(conn, message_id, sid, ordinal, part)] = part
                if encode_part(TextPart(text=text))["text_content"] != text:
                    continue  # m005 kept such a text in the JSON
                marked = new_id("part")  # m005 to m009: type kept, text under the marker
                conn.execute(
                    "INSERT INTO message_parts (id, message_id, session_id, ordinal, part_type, "
                    "content, text_content, created_at) VALUES (?, ?, ?, 2, 'text', ?, ?, 0)",
                    (
                        marked,
                        message_id,
                        sid,
                        '{"type":"text","synthetic":true,"ignored":false,"@text":"text"}',
                        text,
                    ),
                )
                originals[marked] = TextPart(text=text, synthetic=True)
        conn.close()
        pool = StorePool()
        try:
            store = await pool.acquire(db_path=path)
            parts_read = [p for m in await store.get_messages(sid) for p in m.parts]
            assert {p.id: p.model_dump(exclude={"id"}) for p in parts_read} == {
                k: v.model_dump(exclude={"id"}) for k, v in originals.items()
            }
            report = await IntegrityChecker(store, deep=True).run(sid)
            # Every row decodes; the messages were inserted without context items.
            assert {v.kind for v in report.violations} == {ViolationKind.LOST_FROM_VIEW}
        finally:
            await pool.close_all()
