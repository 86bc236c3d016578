"""A random history written through every append path by two stores on one SQLite file
(each one's neighbour cache sees the other's writes), and the contexts history rebuilds:
what the tests of the unstored ``search_context`` compare."""

from __future__ import annotations

import random
import sqlite3

from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import MessagePart, TextPart
from mnesis.store import StorePool
from mnesis.store.base import NewMessage, SessionRecord
from mnesis.store.shared.search_context import SESSION_PARTS_SELECT, rebuild_contexts
from tests.store.sqlite.helpers import indexed_contexts, random_parts, tokens_of

WORDS = "alpha beta gamma\ndelta epsilon 中文 zeta".split(" ")


def _message(rng: random.Random, session_id: str, times: tuple[int, int]) -> Message:
    return Message(
        id=new_id("msg"),
        session_id=session_id,
        role=rng.choice(["user", "assistant", "tool"]),
        created_at=rng.randrange(*times),
        is_summary=rng.random() < 0.05,
    )


async def random_history(
    path: str,
    sessions: list[str],
    steps: int,
    seed: int,
    *,
    max_words: int,
    times: tuple[int, int] = (10**12, 2 * 10**12),
) -> None:
    """``steps`` random appends to ``sessions`` (created here): batches across sessions,
    several messages, a late part on one of the newest messages, single messages; parts
    of up to ``max_words`` words, ``created_at`` in ``times``."""
    rng = random.Random(seed)
    pools = [StorePool(), StorePool()]

    def parts() -> list[MessagePart]:
        return random_parts(rng, WORDS, max_words)

    try:
        stores = [await p.acquire(db_path=path) for p in pools]
        for sid in sessions:
            await stores[0].create_session(SessionRecord(id=sid, model="m"))
        for step in range(steps):
            store = rng.choice(stores)
            sid = rng.choice(sessions)
            pick = rng.random()
            if pick < 0.1:
                batch = [
                    NewMessage(_message(rng, rng.choice(sessions), times), parts())
                    for _ in range(rng.randrange(1, 6))
                ]
                await store.append_batch(batch)
            elif pick < 0.2:
                batch = [NewMessage(_message(rng, sid, times), parts()) for _ in range(3)]
                await store.append_messages(batch)
            elif pick < 0.3 and step:
                found = await store.get_messages(sid)
                if found:
                    # A part appended to an older message after newer ones were written.
                    target = rng.choice(found[-8:]).message.id
                    await store.append_parts(target, [TextPart(text=f"late {step} beta")])
            else:
                await store.append_message(_message(rng, sid, times), parts())
    finally:
        for p in pools:
            await p.close_all()


def indexed_as_rebuilt(path: str, sessions: list[str]) -> dict[int, str | None]:
    """Every indexed part's context (by row key), rebuilt from history; asserts that the
    FTS index holds exactly these contexts (the column is not stored since m009: what
    the writer computed is what it indexed)."""
    conn = sqlite3.connect(path)
    try:
        rebuilt: dict[int, str | None] = {}
        for sid in sessions:
            rebuilt.update(rebuild_contexts(conn.execute(SESSION_PARTS_SELECT, (sid,))))
        assert indexed_contexts(conn) == tokens_of(conn, rebuilt)
        return rebuilt
    finally:
        conn.close()
