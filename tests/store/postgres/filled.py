"""A store opened by hand and the generated turns that fill it, for the PostgreSQL tests
of migrations and search indexes."""

from __future__ import annotations

from mnesis.config import StoreConfig
from mnesis.models.ids import new_id
from mnesis.models.message import Message
from mnesis.models.parts import TextPart, ToolPart, ToolStatus
from mnesis.store.base import NewMessage
from mnesis.store.postgres import PostgresDatabase, PostgresStore

T0 = 1_748_772_000_000
"""The first turn's time (ms)."""


async def open_store(url: str) -> PostgresStore:
    """A store on the database ``url``, migrated by its own runner (as patched)."""
    db = PostgresDatabase(url, StoreConfig(database_url=url, connection_timeout=10))
    await db.open()
    return PostgresStore(db, pool=None, pool_key=url)


def turn_message(sid: str, turn: int, text: str, output: str) -> NewMessage:
    """Turn ``turn`` of ``sid``: a user message on even turns, an assistant one on odd
    turns, holding ``text``; every third turn also holds a ``read`` tool part with
    ``output``."""
    role = "user" if turn % 2 == 0 else "assistant"
    message = Message(id=new_id("msg"), session_id=sid, role=role, created_at=T0 + turn)
    parts: list[TextPart | ToolPart] = [TextPart(text=text)]
    if turn % 3 == 0:
        parts.append(
            ToolPart(
                tool_name="read",
                tool_call_id=f"call_{turn}",
                input={"q": "x"},
                output=output,
                status=ToolStatus(state="completed"),
            )
        )
    return NewMessage(message, list(parts))
