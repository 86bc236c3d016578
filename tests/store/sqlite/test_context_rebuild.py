"""SQLite: the neighbour context of every indexed part can be rebuilt exactly from the
immutable history (what not storing the ``search_context`` column relies on)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, TextPart
from mnesis.store import StorePool
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.shared.search_context import SESSION_PARTS_SELECT, rebuild_contexts
from tests.store.sqlite.helpers import indexed_contexts, random_parts, tokens_of

_WORDS = "alpha beta gamma\ndelta epsilon 中文 zeta".split(" ")


def _parts(rng: random.Random) -> list[MessagePart]:
    return random_parts(rng, _WORDS, 200)


def _message(rng: random.Random, session_id: str) -> Message:
    return Message(
        id=new_id("msg"),
        session_id=session_id,
        role=rng.choice(["user", "assistant", "tool"]),
        created_at=rng.randrange(-(10**12), 4 * 10**12),
        is_summary=rng.random() < 0.05,
    )


async def test_every_stored_context_is_rebuilt_exactly(tmp_path: Path) -> None:
    path = str(tmp_path / "rebuild.db")
    pools = [StorePool(), StorePool()]
    rng = random.Random(17)
    sessions = [new_id("sess") for _ in range(3)]
    try:
        # Two stores on one file: each one's neighbour cache sees the other's writes.
        stores = [await p.acquire(db_path=path) for p in pools]
        for sid in sessions:
            await stores[0].create_session(SessionRecord(id=sid, model="m"))
        for step in range(300):
            store = rng.choice(stores)
            sid = rng.choice(sessions)
            pick = rng.random()
            if pick < 0.1:
                batch = [
                    NewMessage(_message(rng, rng.choice(sessions)), _parts(rng))
                    for _ in range(rng.randrange(1, 6))
                ]
                await store.append_batch(batch)
            elif pick < 0.2:
                batch = [NewMessage(_message(rng, sid), _parts(rng)) for _ in range(3)]
                await store.append_messages(batch)
            elif pick < 0.3 and step:
                found = await store.get_messages(sid)
                if found:
                    # A part appended to an older message after newer ones were written.
                    target = rng.choice(found[-8:]).message.id
                    await store.append_parts(target, [TextPart(text=f"late {step} beta")])
            else:
                await store.append_message(_message(rng, sid), _parts(rng))
    finally:
        for p in pools:
            await p.close_all()
    conn = sqlite3.connect(path)
    try:
        rebuilt: dict[int, str | None] = {}
        for sid in sessions:
            rebuilt.update(rebuild_contexts(conn.execute(SESSION_PARTS_SELECT, (sid,))))
        # The column is not stored (m009): what the writer computed is what it indexed.
        assert indexed_contexts(conn) == tokens_of(conn, rebuilt)
    finally:
        conn.close()
    assert sum(1 for c in rebuilt.values() if c and "\n" in c) > 200
